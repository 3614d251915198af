"""A command's output does not stay in memory (issue 32, item 1): `codecoder exec` of a
command that prints 200 MB peaks about where one that prints 1 MB does, and the session
still replays, its live output as the record keeps it (docs/replay.md)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from codecoder.sessions import SessionStore

CLI = [sys.executable, "-m", "codecoder"]
MB = 1_000_000
NOTE = re.compile(r"\[… ([\d,]+) characters in ([\d,]+) chunks not recorded …\]\n")


def peak_of_exec(tmp_path: Path, size: int) -> float:
    """VmHWM (MB) of an `exec` whose command printed `size` bytes, read once the command
    has finished, while the model's next reply keeps the process alive; then SIGTERM."""
    ws = tmp_path / f"ws-{size}"
    ws.mkdir()
    command = f"yes 'the quick brown fox jumps over the lazy dog' | head -c {size}"
    replies = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": command}}],
        [{"type": "sleep", "seconds": 60}],
    ]
    script = tmp_path / f"script-{size}.json"
    script.write_text(json.dumps(replies))
    proc = subprocess.Popen(
        [*CLI, "exec", "--approval", "full-auto", "--script", str(script), "-C", str(ws), "go"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.strip().endswith("run_command") and not line.startswith("▸"):
                break
        assert "✓" in seen[-1], seen
        status = Path(f"/proc/{proc.pid}/status").read_text()
        peak = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        proc.stderr.close()
    assert code == 143
    return int(peak.split()[1]) / 1024


def test_exec_memory_stays_flat_in_a_commands_output_and_the_session_replays(
    tmp_path: Path,
) -> None:
    small = peak_of_exec(tmp_path, 1 * MB)
    big = peak_of_exec(tmp_path, 200 * MB)
    assert big - small < 50, (small, big)  # it was +200 MB: every chunk kept by the record
    with SessionStore() as store:
        session = next(s.id for s in store.list_sessions(None) if s.cwd.endswith("ws-200000000"))
    replayed = subprocess.run(
        [*CLI, "replay", session, "--json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr
    lines = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert lines[-1]["type"] == "replay" and lines[-1]["identical"] is True
    chunks = [line["chunk"] for line in lines if line["type"] == "tool_output"]
    note = NOTE.fullmatch(chunks[-1])  # the output past what the record holds, in one event
    assert note is not None, chunks[-1][:200]
    kept = "".join(chunks[:-1])
    assert len(kept) <= 1024 * 1024
    assert kept.startswith("the quick brown fox jumps over the lazy dog\n" * 100)
    assert len(kept) + int(note.group(1).replace(",", "")) == 200 * MB
