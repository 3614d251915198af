"""`codecoder acp` does not amplify a command's output for an editor that reads slowly
(issue 29, item 4): a call's live output is a replace-style `tool_call_update` (each one
carries the whole tail), so a connection holds at most one of them per call waiting to
be written, replaced in place by the next. An editor that falls behind gets the latest
output when it catches up, not every tail it missed, and is never dropped for it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.acp_peer import AcpPeer, running, write_script

pytestmark = pytest.mark.timeout(120)

LINES = 300
LINE = 4000
PRINTER = f"""
import sys, time
for i in range({LINES}):
    sys.stdout.write(f"line {{i:04d}} " + "x" * {LINE} + "\\n")
    sys.stdout.flush()
    time.sleep(0.01)
print("the-output-ends")
"""


def run_command(command: str) -> list[dict[str, Any]]:
    return [{"type": "tool_call", "name": "run_command", "args": {"command": command}}]


def output_updates(peer: AcpPeer) -> list[tuple[str, int]]:
    """The live-output `tool_call_update`s the peer read (no status: not the result),
    each its tail and its size on the wire."""
    found = []
    for message, size in zip(peer.received, peer.sizes, strict=True):
        update = message.get("params", {}).get("update", {}) if "method" in message else {}
        if update.get("sessionUpdate") == "tool_call_update" and "status" not in update:
            found.append((update["content"][0]["content"]["text"], size))
    return found


def test_an_editor_that_stalls_gets_the_latest_output_not_every_tail_it_missed(
    tmp_path: Path,
) -> None:
    """The command prints ~1.2 MB over 3 s while the editor reads nothing; once it reads
    again it is sent the tail as it is now. Before, each of the ~300 tails it missed
    (8 KiB each, ~2.4 MB: twice the output) was queued for it and sent in turn."""
    (tmp_path / "printer.py").write_text(PRINTER)
    command = f"{sys.executable} printer.py; touch ended"
    script = write_script(tmp_path / "script.json", run_command(command), ["done"])
    with running(script, approval="full-auto") as peer:
        peer.initialize()
        session = peer.new_session(tmp_path)
        turn = peer.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
        peer.reading.clear()
        deadline = time.monotonic() + 60
        while not (tmp_path / "ended").exists():
            assert time.monotonic() < deadline, "the command never ended"
            time.sleep(0.05)
        time.sleep(0.2)  # the last of its output reaches the connection's queue
        peer.reading.set()
        answer = peer.response(turn, timeout=60)
        assert answer.get("result") == {"stopReason": "end_turn"}, answer
    assert not [m for m in peer.extensions if m["method"] == "_codecoder/dropped"]
    updates = output_updates(peer)
    assert updates and updates[-1][0].endswith("the-output-ends\n")
    sent = sum(size for _, size in updates)
    printed = LINES * (LINE + 11) + len("the-output-ends\n")
    assert len(updates) < 60, len(updates)  # was ~300: one per 10 ms of output
    assert sent < printed / 4, (sent, printed)


def test_an_editor_spending_2_ms_per_update_keeps_up_with_160_mb(tmp_path: Path) -> None:
    """The issue's measurement: a command printing 160 MB under `codecoder acp`, an
    editor that spends 2 ms on each update. It is not dropped, the turn ends, and the
    updates sent are far below the output's size (they were 2-10 times it)."""
    size = 160_000_000
    command = f"yes 'the quick brown fox jumps over the lazy dog' | head -c {size}"
    script = write_script(tmp_path / "script.json", run_command(command), ["done"])
    with running(script, approval="full-auto") as peer:
        peer.pace = 0.002
        peer.initialize()
        session = peer.new_session(tmp_path)
        assert peer.prompt(session, "go") == "end_turn"
    assert not [m for m in peer.extensions if m["method"] == "_codecoder/dropped"]
    sent = sum(size for _, size in output_updates(peer))
    assert 0 < sent < size / 100, sent
