"""`codecoder replay`, `codecoder trace` and `sessions export --as-script` through real
processes: a session recorded by `exec` (tool calls, a denied call, an answered question,
a compaction, parallel sub-agents) replays to the same history and events."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from codecoder.kernel import codec
from codecoder.sessions import SessionStore

CLI = [sys.executable, "-m", "codecoder"]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


SCRIPT: dict[str, Any] = {
    "format": "codecoder-script/1",
    "replies": [
        ["Looking. ", call("read_file", path="a.txt"), {"type": "usage", "input_tokens": 90}],
        [call("run_command", command="touch made.txt")],
        [call("ask_user", question="which one?", options=["a", "b"])],
        [{"type": "error", "kind": "context_length"}],
        [call("agent", tasks=[{"task": "look at part 1"}, {"task": "look at part 2"}])],
        ["All done: the file says hello."],
    ],
    "compaction": [["The user asked to look at a.txt; it says hello."]],
    "subagents": [
        {"match": "part 1", "replies": [[{"type": "sleep", "seconds": 0.05}, "answer one"]]},
        {"match": "part 2", "replies": [[call("read_file", path="a.txt")], ["answer two"]]},
    ],
}


def codecoder(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def answered_run(script: Path, ws: Path) -> list[dict[str, Any]]:
    """`exec --json` asking on stdin, a person denying the command and answering "b"."""
    proc = subprocess.Popen(
        [*CLI, "exec", "--json", "--stdin-replies", "--approval", "ask", "--script",
         str(script), "-C", str(ws), "read a.txt"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines: list[dict[str, Any]] = []
    for raw in proc.stdout:
        line = json.loads(raw)
        lines.append(line)
        if line["type"] == "confirm_request":
            answer: dict[str, Any] = {"decision": "deny"}
        elif line["type"] == "ask_user":
            answer = {"answer": "b"}
        else:
            continue
        reply = {"type": "reply", "request_id": line["request_id"], **answer}
        proc.stdin.write(json.dumps(reply) + "\n")
        proc.stdin.flush()
    proc.stdin.close()
    assert proc.wait(30) == 0, proc.stderr.read()
    proc.stderr.close()
    return lines


def record_session(tmp_path: Path) -> tuple[Path, str, list[dict[str, Any]]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    lines = answered_run(path, ws)
    return ws, lines[0]["session_id"], lines


def test_a_recorded_session_replays_identically(tmp_path: Path) -> None:
    ws, session, lines = record_session(tmp_path)
    kinds = {line["type"] for line in lines}
    assert {"confirm_request", "ask_user", "compacted", "subagent"} <= kinds
    assert not (ws / "made.txt").exists()  # denied
    result = codecoder("replay", session[:8])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("identical: 1 turn,")
    replayed = codecoder("replay", session, "--json")
    assert replayed.returncode == 0
    out = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert out[-1]["type"] == "replay" and out[-1]["identical"] is True
    events = out[:-1]
    recorded = [line for line in lines[1:]]  # lines[0] is the session line
    assert [_plain(e) for e in events] == [_plain(e) for e in recorded]


def _plain(line: dict[str, Any]) -> dict[str, Any]:
    """A line without its question id (a replay makes its questions anew)."""
    line = dict(line)
    line.pop("request_id", None)
    if line["type"] == "subagent":
        line["event"] = _plain(line["event"])
    return line


def test_replay_never_changes_the_recorded_session(tmp_path: Path) -> None:
    _, session, _ = record_session(tmp_path)
    with SessionStore() as store:
        before = [codec.encode(m) for m in store.load_messages(session)]
        records = store.load_records(session)
    assert codecoder("replay", session).returncode == 0
    with SessionStore() as store:
        assert [codec.encode(m) for m in store.load_messages(session)] == before
        assert store.load_records(session) == records
        assert len(store.list_sessions(None)) == 1


def test_live_tools_report_the_call_whose_file_changed(tmp_path: Path) -> None:
    ws, session, _ = record_session(tmp_path)
    same = codecoder("replay", session, "--live-tools")
    assert same.returncode == 0, same.stdout
    assert "call_4_0 (agent)" in same.stdout  # sub-agents are not run again: said so
    (ws / "a.txt").write_text("goodbye\n")
    changed = codecoder("replay", session, "--live-tools")
    assert changed.returncode == 1
    assert changed.stdout.splitlines()[0] == "read_file call call_0_1 gives another result today"
    assert "goodbye" in changed.stdout
    as_json = codecoder("replay", session, "--live-tools", "--json")
    last = json.loads(as_json.stdout.splitlines()[-1])
    assert last["divergence"]["call_id"] == "call_0_1" and last["divergence"]["tool"] == "read_file"


def test_a_session_without_a_record_is_refused_clearly(tmp_path: Path) -> None:
    config = Path.home() / ".config" / "codecoder"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[record]\nenabled = false\n")
    _, session, _ = record_session(tmp_path)
    result = codecoder("replay", session)
    assert result.returncode == 2 and "has no record" in result.stderr
    assert "Traceback" not in result.stderr
    assert codecoder("replay", "nosuchsession").returncode == 2


def test_an_exported_script_plays_the_session_again(tmp_path: Path) -> None:
    ws, session, lines = record_session(tmp_path)
    exported = codecoder("sessions", "export", session, "--as-script")
    assert exported.returncode == 0, exported.stderr
    script = tmp_path / "exported.json"
    script.write_text(exported.stdout)
    again = tmp_path / "again"
    shutil.copytree(ws, again)
    second = answered_run(script, again)

    def calls(seen: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(x["name"], json.dumps(x["args"])) for x in seen if x["type"] == "tool_started"]

    assert calls(second) == calls(lines)
    answer = "".join(x["text"] for x in second if x["type"] == "new_token")
    assert answer == "".join(x["text"] for x in lines if x["type"] == "new_token")
    children = [x for x in second if x["type"] == "subagent" and x["event"]["type"] == "new_token"]
    assert {c["event"]["text"] for c in children} == {"answer one", "answer two"}


def test_trace_shows_the_gap_from_a_cancel_to_its_done(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([["thinking ", {"type": "sleep", "seconds": 30}]]))
    trace = tmp_path / "trace.jsonl"
    proc = subprocess.Popen(
        [*CLI, "exec", "--json", "--script", str(path), "-C", str(tmp_path), "--trace",
         str(trace), "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    while json.loads(proc.stdout.readline())["type"] != "new_token":
        pass
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 130
    shown = codecoder("trace", str(trace))
    assert shown.returncode == 0, shown.stderr
    assert "== agent-loop" in shown.stdout and "-- turn 1 --" in shown.stdout
    gap = shown.stdout.split("== cancel → done ==")[1]
    assert "(agent, turn 1, cancelled)" in gap and gap.strip().endswith("ms")
    only = codecoder("trace", str(trace), "--thread", "agent-loop", "--grep", "done")
    assert "event done cancelled" in only.stdout and "new_token" not in only.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    refused = codecoder("trace", str(bad))
    assert refused.returncode == 2 and "is not a trace" in refused.stderr


def test_trace_bodies_writes_each_request_whole(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([[call("list_dir", path=".")], ["done"]]))
    for flags in ((), ("--trace-bodies",)):
        trace = tmp_path / f"trace{len(flags)}.jsonl"
        result = codecoder(
            "exec", "--script", str(path), "-C", str(tmp_path), "--trace", str(trace), *flags, "go"
        )
        assert result.returncode == 0, result.stderr
        requests = [
            json.loads(line)["data"]
            for line in trace.read_text().splitlines()
            if json.loads(line)["dir"] == "request"
        ]
        assert len(requests) == 2
        if flags:
            assert [m["role"] for m in requests[1]["body"]["messages"]] == [
                "user",
                "assistant",
                "tool",
            ]
            assert requests[1]["body"]["system"]  # the system prompt as sent
        else:
            assert all("body" not in r for r in requests)
