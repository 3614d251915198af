"""`_codecoder/steer`, `_codecoder/steered` and `_codecoder/undo` (issue 18) through
`codecoder acp` in a child process, every message checked as in test_acp_protocol.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codecoder.daemon.rpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, SERVER_ERROR
from tests.daemon.acp_peer import running, write_script

pytestmark = pytest.mark.timeout(90)


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_a_steer_joins_the_running_turn_between_rounds_once(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [call("run_command", command="sleep 0.5")],
        [call("run_command", command="true")],
        ["done"],
    )
    with running(script, approval="full-auto", cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        prompt = agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        agent.wait_update("tool_call")
        steer = agent.call("_codecoder/steer", {"sessionId": session, "text": "and the docs"})
        assert steer == {"running": True}
        result = agent.response(prompt)
        assert result["result"] == {"stopReason": "end_turn"}
    steered = [m["params"] for m in agent.extensions if m["method"] == "_codecoder/steered"]
    assert steered == [
        {"sessionId": session, "text": "and the docs", "nextTurn": False, "by": "user"}
    ]
    kinds = [u["sessionUpdate"] for u in agent.updates]
    joined = kinds.index("user_message_chunk")
    finished = [i for i, u in enumerate(agent.updates) if u.get("status") == "completed"]
    assert finished[0] < joined < finished[1]  # after the first call, before the second's
    assert kinds.count("user_message_chunk") == 1


def test_a_steer_too_late_is_the_next_turn_and_with_no_turn_it_is_one(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        ["first", {"type": "sleep", "seconds": 0.5}],
        ["second"],
        ["third"],
    )
    with running(script, cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        prompt = agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        agent.wait_update("agent_message_chunk")
        assert agent.call("_codecoder/steer", {"sessionId": session, "text": "more"}) == {
            "running": True
        }
        assert agent.response(prompt)["result"] == {"stopReason": "end_turn"}
        agent.wait_update("agent_message_chunk")  # the next turn, made by the steer
        # a prompt sent now is answered at the end of its own turn, not the steer's
        assert agent.prompt(session, "and then") == "end_turn"
        assert agent.call("_codecoder/steer", {"sessionId": session, "text": "x"}) == {
            "running": False
        }
        error = agent.error_of("_codecoder/steer", {"sessionId": session, "text": ""})
        assert error["code"] == INVALID_PARAMS
    steered = [m["params"] for m in agent.extensions if m["method"] == "_codecoder/steered"]
    assert steered[0] == {"sessionId": session, "text": "more", "nextTurn": True, "by": "user"}
    text = "".join(
        u["content"]["text"] for u in agent.updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text.startswith("firstsecondthird")


def test_undo_and_redo_a_turn_of_the_session(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("old\n")
    script = write_script(
        tmp_path / "s.json",
        [call("edit_file", path="a.txt", old_text="old", new_text="new"),
         call("write_file", path="b.txt", content="B\n")],
        ["done"],
    )  # fmt: skip
    with running(script, approval="full-auto", cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        assert agent.prompt(session, "change things") == "end_turn"
        dry = agent.call("_codecoder/undo", {"sessionId": session, "dryRun": True})
        assert dry["dryRun"] is True and (workspace / "b.txt").exists()
        undone = agent.call("_codecoder/undo", {"sessionId": session})
        assert undone["done"] is True and undone["turn"] == 1 and undone["forkSessionId"] is None
        assert undone["files"] == [
            {"path": "a.txt", "action": "restored"},
            {"path": "b.txt", "action": "deleted"},
        ]
        assert "-new\n+old\n" in undone["diff"]
        assert (workspace / "a.txt").read_text() == "old\n" and not (workspace / "b.txt").exists()
        error = agent.error_of("_codecoder/undo", {"sessionId": session})
        assert error["code"] == RESOURCE_NOT_FOUND and "nothing to undo" in error["message"]
        (workspace / "b.txt").write_text("mine\n")
        refused = agent.call("_codecoder/undo", {"sessionId": session, "redo": True})
        assert refused["done"] is False
        assert refused["conflicts"] == [
            {"path": "b.txt", "why": "created since the undo", "kind": "changed"}
        ]
        (workspace / "b.txt").unlink()
        redone = agent.call("_codecoder/undo", {"sessionId": session, "redo": True})
        assert redone["done"] is True and (workspace / "b.txt").read_text() == "B\n"
        bad = agent.error_of("_codecoder/undo", {"sessionId": session, "turn": "1"})
        assert bad["code"] == INVALID_PARAMS


def test_undo_is_refused_while_a_turn_runs(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [call("run_command", command="sleep 1")], ["ok"])
    with running(script, approval="full-auto", cwd=workspace) as agent:
        agent.initialize()
        session = agent.new_session(workspace)
        prompt = agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        agent.wait_update("tool_call")
        error = agent.error_of("_codecoder/undo", {"sessionId": session})
        assert error["code"] == SERVER_ERROR and "a turn is running" in error["message"]
        assert agent.response(prompt)["result"] == {"stopReason": "end_turn"}


def test_the_terminal_clients_remote_agent_steers_and_undoes_through_a_daemon(
    workspace: Path, tmp_path: Path
) -> None:
    from codecoder.daemon.client import RemoteAgent
    from codecoder.kernel.events import Done, Steered
    from tests.daemon.helpers import Daemon

    replies = [
        [call("run_command", command="sleep 0.5")],
        [call("write_file", path="made.txt", content="x\n")],
        ["done"],
    ]
    daemon = Daemon(write_script(tmp_path / "s.json", *replies), "--approval", "full-auto")
    agent = None
    try:
        agent = RemoteAgent.open(daemon.client(), workspace)
        agent.send("go")
        seen = []
        while not (seen and type(seen[-1]).__name__ == "ToolStarted"):
            seen.append(agent.next_event(15))
        assert agent.steer("careful") is True
        while not isinstance(event := agent.next_event(15), Done):
            seen.append(event)
        assert Steered("careful") in seen
        result = agent.undo()
        assert result["done"] is True
        assert result["files"] == [{"path": "made.txt", "action": "deleted"}]
        assert not (workspace / "made.txt").exists()
    finally:
        if agent is not None:
            agent.shutdown()
        daemon.stop()
