"""Hooks through `codecoder exec` (issue 18, items 6-7): real hook processes, each event's
JSON on stdin, exit 0 / 2 / other, timeouts, and what the model reads."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.messages import Message
from codecoder.sessions import SessionStore
from tests.hooks.helpers import CLI, UNCONFINED, call, exec_json, of_type, toml, user_config
from tests.procfs import alive, kill

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def recorder(log: Path, event: str, then: str = "") -> str:
    """A hook that appends its stdin (one JSON object) as a line of `log/EVENT.jsonl`."""
    target = log / f"{event}.jsonl"
    return toml(f"{{ cat; echo; }} >> '{target}'" + (f"; {then}" if then else ""))


def read_log(log: Path, event: str) -> list[dict[str, Any]]:
    path = log / f"{event}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def stored(session_id: str) -> list[Message]:
    with SessionStore() as store:
        return store.load_messages(session_id)


def test_each_event_fires_with_its_json(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    user_config(
        "\n".join(
            f"[[hooks.{event}]]\ncommand = {recorder(log, event)}\n"
            for event in ("session_start", "user_prompt", "pre_tool", "post_tool", "stop")
        )
    )
    replies = [[call("write_file", path="a.txt", content="A\n")], ["all done"]]
    code, lines, err = exec_json(workspace, replies, task="write a")
    assert code == 0, err
    session = lines[0]["session_id"]
    common = {"session_id": session, "cwd": str(workspace), "turn": 1}
    assert read_log(log, "session_start") == [
        {"event": "session_start", **common, "source": "startup"}
    ]
    assert read_log(log, "user_prompt") == [{"event": "user_prompt", **common, "prompt": "write a"}]
    the_call = {"id": "call_0_0", "name": "write_file", "args": {"path": "a.txt", "content": "A\n"}}
    assert read_log(log, "pre_tool") == [{"event": "pre_tool", **common, "tool_call": the_call}]
    assert read_log(log, "post_tool") == [
        {
            "event": "post_tool",
            **common,
            "tool_call": the_call,
            "tool_result": {"status": "success", "content": "Created a.txt (2 bytes, 1 line)."},
        }
    ]
    assert read_log(log, "stop") == [
        {"event": "stop", **common, "last_message": "all done", "stop_hook_active": False}
    ]
    # a second run of the same session: session_start says resume, turns go on counting
    code, lines, err = exec_json(workspace, [["again"]], "--continue", task="more")
    assert code == 0, err
    resumed = read_log(log, "session_start")[-1]
    assert (resumed["source"], resumed["turn"], resumed["session_id"]) == ("resume", 2, session)


def test_pre_compact_fires_and_exit_2_skips_the_compaction(workspace: Path, tmp_path: Path) -> None:
    from codecoder.context.compaction import ThreadedCompactor
    from codecoder.hooks.bridge import CompactionGate
    from codecoder.hooks.config import HookSet, HookSpec
    from codecoder.hooks.runner import HookRunner
    from codecoder.kernel.cancel import CancelToken
    from codecoder.kernel.messages import Text
    from codecoder.providers.scripted import ScriptedProvider, parse_script
    from codecoder.tools.process import ProcessManager

    log = tmp_path / "log"
    log.mkdir()
    answers = tmp_path / "answers"
    answers.write_text("0\n2\n")  # the first run lets it happen, the second blocks
    command = (
        f"{{ cat; echo; }} >> '{log}/pre_compact.jsonl'; code=$(head -1 '{answers}'); "
        f"sed -i 1d '{answers}'; echo 'keep the plan' >&2; exit $code"
    )
    spec = HookSpec("pre_compact", command, "user", "config.toml")
    manager = ProcessManager()
    runner = HookRunner(HookSet((spec,)), manager, workspace, "s1", turn=lambda: 4)
    gate = CompactionGate(runner)
    compactor = ThreadedCompactor(
        ScriptedProvider(
            parse_script(
                json.dumps(
                    {"format": "codecoder-script/1", "replies": [], "compaction": [["a summary"]]}
                )
            )
        ),
        window=1000,
        threshold=0.5,
    )
    compactor.before = gate
    view = [Message(i, "user" if i % 2 else "assistant", (Text("x" * 800),)) for i in range(1, 9)]
    try:
        assert compactor.compact_now(view, CancelToken()) is not None
        assert compactor.compact_now(view, CancelToken()) is None
    finally:
        gate.close()
        compactor.close()
        manager.close()
    fired = read_log(log, "pre_compact")
    assert [f["trigger"] for f in fired] == ["manual", "manual"]
    assert fired[0]["event"] == "pre_compact" and fired[0]["turn"] == 4 and fired[0]["tokens"] > 0
    assert runner.take_notices() == ["a pre_compact hook skipped the compaction: keep the plan"]


def test_exit_2_blocks_the_call_and_the_model_reads_why(workspace: Path) -> None:
    user_config(
        '[[hooks.pre_tool]]\nmatcher = "run_command|edit_*"\n'
        'command = "echo \\"no rm in this repo ($CODECODER_HOOK_EVENT)\\" >&2; exit 2"\n'
    )
    replies = [
        [call("run_command", command="touch made-by-command")],
        [call("write_file", path="allowed.txt", content="ok\n")],
        ["understood"],
    ]
    code, lines, err = exec_json(workspace, replies)
    assert code == 0, err
    finished = of_type(lines, "tool_finished")
    assert finished[0]["error"] == {
        "kind": "denied",
        "message": "blocked by a pre_tool hook: no rm in this repo (pre_tool)",
    }
    assert finished[1]["status"] == "success"  # write_file is not matched
    assert not (workspace / "made-by-command").exists()
    assert (workspace / "allowed.txt").read_text() == "ok\n"
    results = [m for m in stored(lines[0]["session_id"]) if m.role == "tool"]
    assert "blocked by a pre_tool hook: no rm in this repo" in results[0].tool_results[0].text


def test_post_tool_context_and_block_reach_the_result(workspace: Path) -> None:
    user_config(
        '[[hooks.post_tool]]\nmatcher = "write_file"\ncommand = "echo lint: 2 warnings"\n'
        '[[hooks.post_tool]]\nmatcher = "edit_file"\n'
        'command = "echo the file no longer parses >&2; exit 2"\n'
    )
    (workspace / "b.txt").write_text("old\n")
    replies = [
        [call("write_file", path="a.txt", content="A\n"),
         call("edit_file", path="b.txt", old_text="old", new_text="new")],
        ["ok"],
    ]  # fmt: skip
    code, lines, err = exec_json(workspace, replies)
    assert code == 0, err
    write, edit = of_type(lines, "tool_finished")
    assert write["status"] == "success"
    assert write["content"].endswith("\n\n[post_tool hook] lint: 2 warnings")
    assert edit["status"] == "error"
    assert edit["content"].endswith("[post_tool hook] the file no longer parses")


def test_user_prompt_context_joins_the_turn_and_a_block_stops_it(workspace: Path) -> None:
    user_config(
        "[[hooks.user_prompt]]\n"
        "command = \"read -r j; case $j in *secret*) echo 'no secrets' >&2; exit 2;; "
        "esac; echo 'on branch main'\"\n"
    )
    code, lines, err = exec_json(workspace, [["fine"]], task="hello")
    assert code == 0, err
    steered = of_type(lines, "steered")
    assert steered == [
        {
            "type": "steered",
            "turn": 1,
            "text": '<hook-context event="user_prompt">\non branch main\n</hook-context>',
            "next_turn": False,
            "by": "hook",
        }
    ]
    users = [m.text for m in stored(lines[0]["session_id"]) if m.role == "user"]
    assert users == ["hello", steered[0]["text"]]
    code, lines, err = exec_json(workspace, [["never asked"]], task="the secret is 42")
    assert code == 1
    assert of_type(lines, "error") == [
        {"type": "error", "turn": 1, "kind": "blocked",
         "message": "a user_prompt hook blocked the prompt: no secrets"}
    ]  # fmt: skip
    assert not of_type(lines, "new_token")
    assert "no secrets" in err


def test_stop_exit_2_continues_the_turn_once_per_answer(workspace: Path, tmp_path: Path) -> None:
    flag = tmp_path / "ran-once"
    hook = (
        f"read -r j; if [ ! -e {flag} ]; then touch {flag}; echo tests fail >&2; exit 2; fi; "
        f'echo "$j" > {tmp_path}/second.json'
    )
    user_config(f"[[hooks.stop]]\ncommand = {toml(hook)}\n")
    code, lines, err = exec_json(workspace, [["first answer"], ["fixed them"]])
    assert code == 0, err
    assert of_type(lines, "steered")[0]["text"] == "tests fail"
    assert "".join(t["text"] for t in of_type(lines, "new_token")) == "first answerfixed them"
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["stop_hook_active"] is True and second["last_message"] == "fixed them"
    assert len(of_type(lines, "done")) == 1


def test_other_exits_warn_and_go_on(workspace: Path) -> None:
    user_config(
        '[[hooks.pre_tool]]\ncommand = "echo boom >&2; exit 7"\n'
        '[[hooks.user_prompt]]\ncommand = "kill -TERM $$"\n'
    )
    replies = [[call("write_file", path="a.txt", content="A\n")], ["ok"]]
    code, lines, err = exec_json(workspace, replies)
    assert code == 0, err
    warnings = [
        line["detail"] for line in of_type(lines, "status_update") if line["notice"] == "hook"
    ]
    assert "user_prompt hook `kill -TERM $$` was killed by signal 15" in warnings
    assert "pre_tool hook `echo boom >&2; exit 7` exited 7: boom" in warnings
    assert (workspace / "a.txt").read_text() == "A\n"  # the call ran all the same
    assert "exited 7: boom" in err  # said on stderr too, as MCP notices are


@pytest.fixture
def leave_nothing() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        kill(pid)


def test_a_hanging_hook_is_killed_at_its_timeout(
    workspace: Path, tmp_path: Path, leave_nothing: list[int]
) -> None:
    pidfile = tmp_path / "hook.pid"
    user_config(
        "[[hooks.pre_tool]]\ntimeout = 1\n"
        f"command = {toml(f'echo $$ > {pidfile}; sleep 300 & echo $! >> {pidfile}; wait')}\n"
    )
    replies = [[call("write_file", path="a.txt", content="A\n")], ["ok"]]
    started = time.monotonic()
    code, lines, err = exec_json(workspace, replies)
    took = time.monotonic() - started
    assert code == 0, err
    pids = [int(word) for word in pidfile.read_text().split()]
    leave_nothing.extend(pids)
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)  # shell and its sleep
    warnings = [
        line["detail"] for line in of_type(lines, "status_update") if line["notice"] == "hook"
    ]
    assert any("timed out after 1 s and was killed" in w for w in warnings)
    assert (workspace / "a.txt").exists()
    assert took < 30


def test_cancel_kills_a_running_hook(
    workspace: Path, tmp_path: Path, leave_nothing: list[int]
) -> None:
    pidfile = tmp_path / "hook.pid"
    user_config(
        f"[[hooks.user_prompt]]\ncommand = {toml(f'echo $$ > {pidfile}; exec sleep 300')}\n"
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([["never"]]))
    proc = subprocess.Popen(
        [*CLI, "exec", "--json", *UNCONFINED, "--script", str(script), "-C", str(workspace), "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the hook never started"
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    leave_nothing.append(pid)
    assert alive(pid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert not alive(pid)
    done = [json.loads(line) for line in out.splitlines()][-1]
    assert done == {"type": "done", "turn": 1, "cancelled": True, "reason": "cancelled"}


def test_a_matcher_on_an_event_without_a_tool_is_a_config_error(workspace: Path) -> None:
    path = user_config('[[hooks.stop]]\nmatcher = "run_command"\ncommand = "true"\n')
    code, _, err = exec_json(workspace, [["x"]])
    assert code == 2
    assert f"{path}: [[hooks.stop]] has a matcher" in err
    user_config('[[hooks.pre_tool]]\ncomand = "true"\n')
    code, _, err = exec_json(workspace, [["x"]])
    assert code == 2 and "unknown key `comand`" in err and "did you mean `command`" in err


def test_a_replay_runs_no_hook_and_is_identical(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    user_config(
        "\n".join(
            f"[[hooks.{event}]]\ncommand = {recorder(log, event, then)}\n"
            for event, then in (
                ("user_prompt", "echo context"),
                ("pre_tool", "exit 9"),
                ("post_tool", "echo noted"),
                ("stop", "exit 0"),
            )
        )
    )
    replies = [[call("write_file", path="a.txt", content="A\n")], ["done"]]
    code, lines, err = exec_json(workspace, replies)
    assert code == 0, err
    counts = {e: len(read_log(log, e)) for e in ("user_prompt", "pre_tool", "post_tool", "stop")}
    replay = subprocess.run(
        [*CLI, "replay", lines[0]["session_id"]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert "identical" in replay.stdout
    assert {e: len(read_log(log, e)) for e in counts} == counts  # no hook ran again
