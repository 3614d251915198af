"""`codecoder acp` against the official ACP v1 schema: a real child process on a scripted
model, driven over stdio as an editor drives it, through every part of the protocol we
implement (docs/acp.md). Every message the agent sends is checked against the pydantic
models of the `agent-client-protocol` package as it arrives (tests/daemon/acp_peer.py):
a response against the `*Response` of its method, `session/update` against
SessionNotification, `session/request_permission` against RequestPermissionRequest, an
error against the JSON-RPC error shape; `_codecoder/…` messages must be documented."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from codecoder.daemon.rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_FRAME,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
)
from codecoder.permissions.modes import MODES
from tests.daemon.acp_peer import DOCS, AcpPeer, Message, conforms, running, write_script

pytestmark = pytest.mark.timeout(60)

SRC = Path(__file__).resolve().parents[2] / "src" / "codecoder" / "daemon"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def choose(*option_ids: str) -> Any:
    """Answers permission requests with these options in turn; keeps each request."""
    answers = iter(option_ids)
    asked: list[Message] = []

    def answer(message: Message) -> Any:
        assert message["method"] == "session/request_permission", message
        asked.append(message["params"])
        return {"outcome": {"outcome": "selected", "optionId": next(answers)}}

    answer.asked = asked  # type: ignore[attr-defined]
    return answer


def asked_of(answer: Any) -> list[Message]:
    return answer.asked


def text_of(updates: list[Message], kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


def updates_of(updates: list[Message], call_id: str) -> list[Message]:
    return [u for u in updates if u.get("toolCallId") == call_id]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


# --- initialize and session/new -------------------------------------------------------


@pytest.mark.parametrize("asked", [1, 2, 0, -1])
def test_initialize_answers_version_1_and_our_capabilities(
    workspace: Path, tmp_path: Path, asked: int
) -> None:
    """We speak version 1 only: asked for it we agree, asked for any other we name ours
    (the schema caught the answer -1 to a client's -1: a version is 0 to 65535)."""
    with running(write_script(tmp_path / "s.json", ["x"]), cwd=workspace) as agent:
        result = agent.call("initialize", {"protocolVersion": asked, "clientCapabilities": {}})
    assert result["protocolVersion"] == 1
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["promptCapabilities"] == {
        "image": False,
        "audio": False,
        "embeddedContext": True,
    }
    assert result["authMethods"] == []
    assert result["agentInfo"]["name"] == "codecoder"


def test_new_session_offers_the_approval_modes(workspace: Path, tmp_path: Path) -> None:
    with running(write_script(tmp_path / "s.json", ["x"]), cwd=workspace) as agent:
        agent.initialize()
        result = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert re.fullmatch(r"[0-9a-f]{32}", result["sessionId"])
    modes = result["modes"]
    assert modes["currentModeId"] == "ask"  # an editor is a person who can answer
    assert [m["id"] for m in modes["availableModes"]] == list(MODES)


# --- prompt turns ----------------------------------------------------------------------


def test_a_text_turn_streams_reasoning_and_text(workspace: Path, tmp_path: Path) -> None:
    reply = {
        "parts": [
            {"type": "reasoning", "text": "The user greets me."},
            {"type": "text", "text": "Hello there, how can I help?"},
            {"type": "usage", "input_tokens": 120, "output_tokens": 9},
        ]
    }
    with running(write_script(tmp_path / "s.json", reply), cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "hello") == "end_turn"
    assert text_of(agent.updates, "agent_thought_chunk") == "The user greets me."
    assert text_of(agent.updates, "agent_message_chunk") == "Hello there, how can I help?"
    kinds = [u["sessionUpdate"] for u in agent.updates]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
    usage = [m["params"] for m in agent.extensions if m["method"] == "_codecoder/usage"]
    assert usage and usage[0]["input_tokens"] == 120 and usage[0]["output_tokens"] == 9
    assert all(m["params"]["sessionId"] == session for m in agent.extensions)


def test_permission_allow_once_deny_and_deny_for_the_session(
    workspace: Path, tmp_path: Path
) -> None:
    """A command that needs permission: allowed once it runs (live output, then its
    result); denied (reject_once) it fails and does nothing; denied for the session
    (reject_always) the same command is then refused without asking."""
    script = write_script(
        tmp_path / "s.json",
        [call("run_command", command="mkdir build && printf made")],
        [call("run_command", command="rmdir build")],
        [call("run_command", command="rmdir build")],
        [call("run_command", command="rmdir build")],
        ["Left it alone."],
    )
    answer = choose("allow_once", "deny", "deny_session")
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "make a build folder", answer=answer) == "end_turn"
    assert (workspace / "build").is_dir()
    asked = asked_of(answer)
    assert len(asked) == 3  # the fourth call was refused without asking
    first = asked[0]
    assert first["sessionId"] == session
    assert first["toolCall"]["toolCallId"] == "call_0_0"
    assert first["toolCall"]["kind"] == "execute"
    assert first["toolCall"]["title"] == "mkdir build && printf made"
    assert first["toolCall"]["status"] == "pending"
    assert [(o["optionId"], o["kind"]) for o in first["options"]] == [
        ("allow_once", "allow_once"),
        ("allow_session", "allow_always"),
        ("allow_project", "allow_always"),
        ("deny", "reject_once"),
        ("deny_session", "reject_always"),
    ]
    started = updates_of(agent.updates, "call_0_0")
    assert started[0]["sessionUpdate"] == "tool_call"
    assert started[0]["rawInput"] == {"command": "mkdir build && printf made"}
    assert started[-1]["status"] == "completed"
    assert "made" in started[-1]["content"][0]["content"]["text"]
    for denied in ("call_1_0", "call_2_0", "call_3_0"):
        last = updates_of(agent.updates, denied)[-1]
        assert last["status"] == "failed"
        assert "denied" in last["content"][0]["content"]["text"]


def test_edits_carry_their_diff(workspace: Path, tmp_path: Path) -> None:
    """write_file and edit_file: the permission request shows the diff (oldText null for
    a new file), the finished call carries it again, locations are absolute; an edit
    allowed for the session is not asked again."""
    script = write_script(
        tmp_path / "s.json",
        [call("write_file", path="notes.txt", content="one\n")],
        [call("edit_file", path="notes.txt", old_text="one", new_text="two")],
        [call("edit_file", path="notes.txt", old_text="two", new_text="three")],
        ["Edited."],
    )
    answer = choose("allow_once", "allow_session")
    target = str(workspace / "notes.txt")
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "write notes", answer=answer) == "end_turn"
    assert (workspace / "notes.txt").read_text() == "three\n"
    write, edit = asked_of(answer)
    assert write["toolCall"]["content"] == [
        {"type": "diff", "path": target, "oldText": None, "newText": "one\n"}
    ]
    assert edit["toolCall"]["content"] == [
        {"type": "diff", "path": target, "oldText": "one", "newText": "two"}
    ]
    for call_id, old, new in (("call_0_0", None, "one\n"), ("call_2_0", "two", "three")):
        started, *_, finished = updates_of(agent.updates, call_id)
        assert started["kind"] == "edit"
        assert started["locations"] == [{"path": target}]
        assert finished["status"] == "completed"
        assert finished["content"][0] == {
            "type": "diff",
            "path": target,
            "oldText": old,
            "newText": new,
        }


def test_a_near_miss_edit_asks_with_the_text_it_writes(workspace: Path, tmp_path: Path) -> None:
    """An old_text copied without its indentation: the permission request's diff holds
    the file's own lines and new_text shifted as it is written, so a client can place
    it. Before, it held the model's text, found nowhere in the file."""
    (workspace / "m.py").write_text("def f():\n    if x:\n        return 1\n")
    script = write_script(
        tmp_path / "s.json",
        [call("edit_file", path="m.py", old_text="if x:\n    return 1", new_text="return 2")],
        ["Edited."],
    )
    answer = choose("allow_once")
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "edit it", answer=answer) == "end_turn"
    (edit,) = asked_of(answer)
    old, new = "    if x:\n        return 1\n", "    return 2\n"
    assert edit["toolCall"]["content"] == [
        {"type": "diff", "path": str(workspace / "m.py"), "oldText": old, "newText": new}
    ]
    assert (workspace / "m.py").read_text() == f"def f():\n{new}"


def test_todo_write_is_a_plan(workspace: Path, tmp_path: Path) -> None:
    items = [
        {"content": "Read the code", "status": "done"},
        {"content": "Write the test", "status": "in_progress"},
        {"content": "Run it"},
    ]
    script = write_script(tmp_path / "s.json", [call("todo_write", items=items)], ["Planned."])
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "plan it") == "end_turn"
    plans = [u for u in agent.updates if u["sessionUpdate"] == "plan"]
    assert plans == [
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "Read the code", "priority": "medium", "status": "completed"},
                {"content": "Write the test", "priority": "medium", "status": "in_progress"},
                {"content": "Run it", "priority": "medium", "status": "pending"},
            ],
        }
    ]
    assert updates_of(agent.updates, "call_0_0")[0]["kind"] == "think"


def test_cancel_during_silence_ends_the_turn_at_once(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"parts": [{"type": "text", "text": "Working on it"}, {"type": "sleep", "seconds": 60}]},
        ["Still here."],
    )
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        pending = agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        agent.wait_update("agent_message_chunk")
        sent = time.monotonic()
        agent.notify("session/cancel", {"sessionId": session})
        response = agent.response(pending)
        took = time.monotonic() - sent
        assert response["result"] == {"stopReason": "cancelled"}
        assert took < 1.0, f"cancel took {took:.3f} s"
        assert agent.prompt(session, "again") == "end_turn"  # the session goes on
    assert text_of(agent.updates, "agent_message_chunk") == "Working on itStill here."


def test_cancel_while_a_permission_request_waits(workspace: Path, tmp_path: Path) -> None:
    """The turn ends cancelled; the question is withdrawn (`_codecoder/request_resolved`)
    and the client's late `cancelled` outcome, as ACP prescribes it, is taken quietly."""
    script = write_script(
        tmp_path / "s.json", [call("run_command", command="touch made")], ["Next."]
    )
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        pending = agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        question = agent.next()
        while question.get("method") != "session/request_permission":
            question = agent.next()
        agent.notify("session/cancel", {"sessionId": session})
        assert agent.response(pending)["result"] == {"stopReason": "cancelled"}
        agent.send(
            {
                "jsonrpc": "2.0",
                "id": question["id"],
                "result": {"outcome": {"outcome": "cancelled"}},
            }
        )
        assert agent.prompt(session, "again") == "end_turn"
    assert not (workspace / "made").exists()
    resolved = [
        m["params"] for m in agent.extensions if m["method"] == "_codecoder/request_resolved"
    ]
    assert resolved == [
        {"sessionId": session, "toolCallId": "call_0_0", "reason": "the turn ended"}
    ]
    finished = updates_of(agent.updates, "call_0_0")[-1]
    assert finished["status"] == "failed"


def test_set_mode_switches_the_approval_mode(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [call("write_file", path="auto.txt", content="x")], ["Written."]
    )
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.call("session/set_mode", {"sessionId": session, "modeId": "auto-edit"}) == {}
        assert agent.updates[-1] == {
            "sessionUpdate": "current_mode_update",
            "currentModeId": "auto-edit",
        }
        assert agent.prompt(session, "write it") == "end_turn"  # no question: auto-edit
        error = agent.error_of("session/set_mode", {"sessionId": session, "modeId": "yolo"})
        assert error["code"] == INVALID_PARAMS
    assert (workspace / "auto.txt").read_text() == "x"


def test_the_tools_offered_follow_a_mode_switch(workspace: Path, tmp_path: Path) -> None:
    """read-only offers no edit tool; switched to auto-edit, the next request offers
    write_file again (before, the set chosen at the start stayed: "unknown tool")."""
    script = write_script(
        tmp_path / "s.json",
        [call("write_file", path="early.txt", content="x")],
        ["Could not."],
        [call("write_file", path="later.txt", content="y")],
        ["Written."],
    )
    with running(script, approval="read-only", cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "write it") == "end_turn"
        refused = updates_of(agent.updates, "call_0_0")[-1]
        assert refused["status"] == "failed"
        assert agent.call("session/set_mode", {"sessionId": session, "modeId": "auto-edit"}) == {}
        assert agent.prompt(session, "now write it") == "end_turn"
        assert updates_of(agent.updates, "call_2_0")[-1]["status"] == "completed"
    assert not (workspace / "early.txt").exists()
    assert (workspace / "later.txt").read_text() == "y"


def test_a_subagent_is_one_tool_call_and_its_events_an_extension(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "test_a.py").write_text("")
    tasks = [{"task": "Count the test files\n in the workspace"}]
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            {
                "format": "codecoder-script/1",
                "replies": [[call("agent", tasks=tasks)], ["One test file."]],
                "subagents": [
                    {
                        "match": "test files",
                        "replies": [[call("glob", pattern="test_*.py")], ["Found 1."]],
                    }
                ],
            }
        )
    )
    with running(path, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "how many tests?") == "end_turn"
    started, finished = updates_of(agent.updates, "call_0_0")
    assert started["title"] == "Sub-agent: Count the test files in the workspace"
    assert started["kind"] == "think"
    assert finished["status"] == "completed"
    assert finished["content"][0]["content"]["text"] == "Found 1."
    inner = [m["params"] for m in agent.extensions if m["method"] == "_codecoder/subagent"]
    kinds = [p["event"]["type"] for p in inner]
    assert "tool_started" in kinds and "tool_finished" in kinds and kinds[-1] == "done"
    assert {p["agentId"] for p in inner} == {inner[0]["agentId"]}


# --- prompts with resources, and session/load ------------------------------------------------


def test_load_replays_the_finished_session_with_its_resources(
    workspace: Path, tmp_path: Path
) -> None:
    """A session run in one `codecoder acp` is loaded by another (the editor restarted):
    the whole conversation comes back as updates before the load's answer, including a
    prompt's embedded resource and the content of a resource_link to a workspace file."""
    (workspace / "app.py").write_text("print('linked')\n")
    script = write_script(
        tmp_path / "first.json",
        {
            "parts": [
                {"type": "reasoning", "text": "Look."},
                call("write_file", path="a.txt", content="A"),
            ]
        },
        ["Saw both files."],
    )
    embedded = {
        "type": "resource",
        "resource": {
            "uri": f"file://{workspace}/spec.md",
            "mimeType": "text/markdown",
            "text": "# Spec",
        },
    }
    link = {"type": "resource_link", "uri": f"file://{workspace}/app.py", "name": "app.py"}
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        stop = agent.prompt(session, "Read these", embedded, link, answer=choose("allow_once"))
        assert stop == "end_turn"
    live = [u for u in agent.updates if u["sessionUpdate"] != "user_message_chunk"]

    later = write_script(tmp_path / "later.json", ["Welcome back."])
    with running(later, cwd=workspace) as editor:
        editor.initialize()
        loaded = editor.request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        response = editor.response(loaded)
        assert response["result"]["modes"]["currentModeId"] == "ask"
        replayed = list(editor.updates)  # everything that came before the answer
        assert editor.prompt(session, "still there?") == "end_turn"
    user = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert user == [
        f'Read these\n\n<file path="{workspace}/spec.md">\n# Spec\n</file>\n\n'
        f"<file path=\"{workspace}/app.py\">\nprint('linked')\n\n</file>"
    ]
    assert text_of(replayed, "agent_thought_chunk") == text_of(live, "agent_thought_chunk")
    assert text_of(replayed, "agent_message_chunk") == "Saw both files."
    started, finished = updates_of(replayed, "call_0_1")
    assert started == {**updates_of(live, "call_0_1")[0]}
    assert finished["status"] == "completed"
    assert finished["content"][0]["type"] == "diff"
    assert text_of(editor.updates, "agent_message_chunk").endswith("Welcome back.")


# --- questions ---------------------------------------------------------------------------


def ask(question: str, *options: str) -> dict[str, Any]:
    return call("ask_user", question=question, options=list(options))


def test_ask_user_goes_to_a_client_that_declares_it(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [ask("Which colour?", "red", "blue")], ["Green it is."]
    )
    asked: list[Message] = []

    def answer(message: Message) -> Any:
        asked.append(message)
        return {"answer": "green, actually"}

    with running(script, cwd=workspace) as agent:
        agent.initialize(ask_user=True)
        session = agent.new_session(workspace)
        assert agent.prompt(session, "paint it", answer=answer) == "end_turn"
    assert [m["method"] for m in asked] == ["_codecoder/ask_user"]
    assert asked[0]["params"] == {
        "sessionId": session,
        "toolCallId": "call_0_0",
        "question": "Which colour?",
        "options": ["red", "blue"],
    }
    finished = updates_of(agent.updates, "call_0_0")[-1]
    assert finished["status"] == "completed"
    assert finished["content"][0]["content"]["text"] == "green, actually"


@pytest.mark.parametrize(("option", "text"), [("choice_1", "blue"), ("decline", None)])
def test_ask_user_falls_back_to_permission_options(
    workspace: Path, tmp_path: Path, option: str, text: str | None
) -> None:
    """A client without `_codecoder/ask_user` gets the question as a permission request
    on the ask_user tool call itself, one option per choice and one to decline."""
    script = write_script(tmp_path / "s.json", [ask("Which colour?", "red", "blue")], ["OK."])
    answer = choose(option)
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "paint it", answer=answer) == "end_turn"
    (request,) = asked_of(answer)
    assert request["toolCall"] == {
        "toolCallId": "call_0_0",
        "title": "Which colour?",
        "kind": "other",
    }
    assert [(o["optionId"], o["name"], o["kind"]) for o in request["options"]] == [
        ("choice_0", "red", "allow_once"),
        ("choice_1", "blue", "allow_once"),
        ("decline", "Don't answer", "reject_once"),
    ]
    result = updates_of(agent.updates, "call_0_0")[-1]["content"][0]["content"]["text"]
    assert result == (text or "(the user did not answer)")


# --- robustness ---------------------------------------------------------------------------------


def test_bad_frames_get_errors_and_the_connection_stays_usable(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", ["Still fine."])
    with running(script, cwd=workspace) as agent:
        agent.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", \n')
        assert agent.next()["error"]["code"] == PARSE_ERROR
        agent.send_raw(b"[1, 2]\n")
        assert agent.next()["error"]["code"] == INVALID_REQUEST
        agent.send_raw(b'{"jsonrpc": "2.0", "id": 7, "method": 5}\n')
        assert agent.next() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": INVALID_REQUEST, "message": "the method is not a string"},
        }
        assert agent.error_of("session/fork", {"sessionId": "x"})["code"] == METHOD_NOT_FOUND
        assert agent.error_of("initialize", [1])["code"] == INVALID_PARAMS
        assert agent.error_of("initialize", {"protocolVersion": "1"})["code"] == INVALID_PARAMS
        agent.initialize()
        bad_cwd = {"cwd": "relative/dir", "mcpServers": []}
        assert agent.error_of("session/new", bad_cwd)["code"] == INVALID_PARAMS
        unknown = {"sessionId": "f" * 32, "prompt": [{"type": "text", "text": "hi"}]}
        assert agent.error_of("session/prompt", unknown)["code"] == RESOURCE_NOT_FOUND
        session = agent.new_session(workspace)
        for prompt in ("hi", [], [{"type": "image", "data": "", "mimeType": "image/png"}]):
            params = {"sessionId": session, "prompt": prompt}
            assert agent.error_of("session/prompt", params)["code"] == INVALID_PARAMS
        oversize = b'{"jsonrpc": "2.0", "id": 99, "method": "x", "params": "'
        agent.send_raw(oversize + b"a" * MAX_FRAME + b'"}\n')
        error = agent.next(timeout=30)
        assert error["id"] is None and error["error"]["code"] == INVALID_REQUEST
        assert agent.prompt(session, "still there?") == "end_turn"
    assert text_of(agent.updates, "agent_message_chunk") == "Still fine."


def test_the_agent_ends_when_the_editor_closes_stdin(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"parts": [{"type": "text", "text": "a"}, {"type": "sleep", "seconds": 60}]},
    )
    agent = AcpPeer(script, cwd=workspace)
    try:
        agent.initialize()
        session = agent.new_session(workspace)
        agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        agent.wait_update("agent_message_chunk")
        started = time.monotonic()
        assert agent.close() == 0  # mid-turn: the turn is cancelled, the session committed
        assert time.monotonic() - started < 5
    finally:
        agent.kill()


# --- the extensions are documented --------------------------------------------------------------


def test_every_extension_is_documented() -> None:
    """Each `_codecoder/…` method or notification the daemon can send or answer appears
    in docs/acp.md, and the schema check refuses any that does not."""
    names = set()
    for source in SRC.glob("*.py"):
        names |= set(re.findall(r'"(_codecoder/[a-z_/]+)"', source.read_text()))
    assert {"_codecoder/ask_user", "_codecoder/sessions/list", "_codecoder/dropped"} <= names
    docs = DOCS.read_text()
    assert [name for name in sorted(names) if f"`{name}`" not in docs] == []


def test_the_examples_in_the_docs_are_json_and_conform() -> None:
    """docs/acp.md's examples are JSON; what the agent sends among them (requests to the
    client, notifications, errors) passes the same check as the live messages, and each
    extension with a heading of its own has an example."""
    messages: list[Message] = []
    for block in re.findall(r"```json\n(.*?)```", DOCS.read_text(), re.DOTALL):
        try:
            messages += [json.loads(line) for line in block.splitlines() if line.strip()]
        except ValueError:
            json.loads(block)  # a settings file, not protocol lines
    peer = AcpPeer.__new__(AcpPeer)  # only its check: no child process
    peer.updates, peer.extensions, peer._methods = [], [], {}
    to_client = ("session/update", "session/request_permission", "_codecoder/ask_user")
    for message in messages:
        method = message.get("method")
        if "error" in message or method in to_client or (method and "id" not in message):
            peer.check(message)
    headings = re.findall(r"^### `(_codecoder/[a-z_/]+)`", DOCS.read_text(), re.MULTILINE)
    shown = {m["method"] for m in messages if "method" in m}
    assert len(headings) == 16
    assert set(headings) <= shown


def test_the_strict_check_refuses_what_the_lenient_models_accept() -> None:
    """The package's models drop unknown fields and salvage malformed optional ones; the
    check does not (so the tests above would see such a mistake)."""
    from acp import schema

    good = {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t", "kind": "execute"}
    conforms(schema.SessionNotification, {"sessionId": "s", "update": good})
    for bad in (
        {**good, "kind": "shell"},  # salvaged to None by the model
        {**good, "extra": 1},  # ignored by the model
        {**good, "locations": [{"path": "/a", "line": -1}]},  # the item salvaged
        {**good, "title": 5},  # coerced? refused either way
    ):
        with pytest.raises(AssertionError):
            conforms(schema.SessionNotification, {"sessionId": "s", "update": bad})
