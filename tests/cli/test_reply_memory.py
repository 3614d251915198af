"""A model's reply is bounded as a whole (issue 32, adversarial review): a fake endpoint on
127.0.0.1 streams 200 MB of text, or of one call's arguments, over the real OpenAI chat
and Anthropic messages wires to `codecoder exec --json`, a child process. The reply is cut
at the kernel's caps: the turn ends with a `reply_too_long` error and exit 1, the process
stays small (it took 975 MB for the text and 1.9 GB for the arguments), the store keeps
the text up to the cap as an interrupted message and nothing larger, and it is quick
(the connection is dropped at the cap, nothing more is read)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.kernel.reply import MAX_REPLY_ARGS, MAX_REPLY_TEXT
from tests.fakes.wire_server import Call, Reply, Text, WireServer

PIECE = 64 * 1024
FILLER = "x" * PIECE
FLOOD = 200 * 1_000_000 // PIECE  # 200 MB in 64 KiB deltas

# The child is started by a bare `python -S` (~9 MB): a child of this test process would
# inherit this process's size as the floor of its peak RSS (bench/launcher.py says why).
LAUNCH = r"""
import json, os, sys
argv, env, out, err = json.loads(sys.argv[1])
actions = [
    (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
    (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
]
pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss]))
"""


def exec_peak(tmp_path: Path, argv: list[str]) -> tuple[int, float, list[dict[str, object]]]:
    """(exit status, peak RSS in MB, JSONL events) of `codecoder exec ARGV`; a run that
    takes over 60 s is killed with its launcher (nothing is left running) and fails."""
    out, err = tmp_path / "exec.out", tmp_path / "exec.err"
    request = [[sys.executable, "-m", "codecoder", "exec", *argv], dict(os.environ)]
    launcher = subprocess.Popen(
        [sys.executable, "-S", "-c", LAUNCH, json.dumps([*request, str(out), str(err)])],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        answer, _ = launcher.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.communicate()
        pytest.fail(f"exec still running after 60 s: {err.read_text()[-2000:]}")
    code, maxrss = json.loads(answer)
    events = [json.loads(line) for line in out.read_text().splitlines()]
    return code, maxrss / 1024, events


def stored(workspace: Path) -> list[tuple[str, str, bytes]]:
    """(role, status, body) of every message the store keeps, read with plain SQL."""
    path = paths.data_dir() / "sessions.sqlite3"
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT role, status, body FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.cwd = ? ORDER BY seq",
            (str(workspace),),
        ).fetchall()
    conn.close()
    return rows


@pytest.mark.parametrize("wire", ["chat", "anthropic"])
@pytest.mark.parametrize("kind", ["text", "args"])
def test_a_200_mb_reply_is_cut_at_the_cap_in_bounded_memory(
    tmp_path: Path, wire: str, kind: str
) -> None:
    if kind == "text":
        reply = Reply((Text("a start. "), Text(FILLER)), repeat=(FILLER, FLOOD))
    else:
        pieces = ('{"path": "', FILLER, '"}')
        reply = Reply((Call("read_file", "{}", pieces=pieces),), repeat=(FILLER, FLOOD))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with WireServer() as server:
        server.enqueue(reply)
        config = paths.config_dir() / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        base = server.url if wire == "anthropic" else f"{server.url}/v1"
        config.write_text(f'[providers.fake]\nbase_url = "{base}"\nwire = "{wire}"\n')
        argv = ["--json", "-m", "fake/model", "-C", str(workspace), "go"]
        code, peak, events = exec_peak(tmp_path, argv)
    assert code == 1, events[-3:]
    errors = [e for e in events if e["type"] == "error"]
    what, cap = ("text", MAX_REPLY_TEXT)
    if kind == "args":
        what, cap = ("tool-call arguments (read_file)", MAX_REPLY_ARGS)
    assert len(errors) == 1 and errors[0]["kind"] == "reply_too_long", errors
    assert str(errors[0]["message"]).endswith(
        f"the model's reply passed {cap:,} characters of {what} and was cut there"
    )
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "error"
    assert peak < 150, peak  # measured ~55 MB; it was 975 MB (text) and 1.9 GB (arguments)
    shown = "".join(str(e["text"]) for e in events if e["type"] == "new_token")
    assert not any(e["type"] == "tool_started" for e in events)  # the cut call never ran
    rows = stored(workspace)
    assert max(len(body) for _, _, body in rows) < cap + 64 * 1024
    if kind == "text":
        assert shown == "a start. " + "x" * (MAX_REPLY_TEXT - len("a start. "))
        (role, status, body) = rows[-1]
        assert (role, status) == ("assistant", "interrupted")
        assert json.loads(body)["items"] == [{"type": "text", "text": shown}]
    else:
        assert shown == ""
        assert [role for role, _, _ in rows] == ["user"]  # a call cut short is not kept
