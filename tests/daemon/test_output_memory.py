"""A command's output does not stay in the memory of `codecoder daemon` or `codecoder
acp` (issue 32, item 1): a turn whose command prints 200 MB raises the peak little over
one whose command prints 1 MB (the session record, the frames kept for late clients and
the event channel all stay bounded)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.daemon.helpers import Daemon, write_script

pytestmark = pytest.mark.timeout(120)

CLI = [sys.executable, "-m", "codecoder"]
MB = 1_000_000
UPDATE = b'{"jsonrpc":"2.0","method":"session/update"'
GROWTH = 60  # MB; it was over 200 (the record kept every chunk of the call)


def command(size: int) -> list[dict[str, Any]]:
    run = f"yes 'the quick brown fox jumps over the lazy dog' | head -c {size}"
    return [{"type": "tool_call", "name": "run_command", "args": {"command": run}}]


REPLIES = [command(1 * MB), ["one"], command(200 * MB), ["two"]]


class Readable(Protocol):
    def readline(self) -> bytes: ...


class Peer:
    """A bare JSON-RPC client that reads every message up to each answer, the stream's
    updates unparsed (so that it never lags behind the agent)."""

    def __init__(self, reader: Readable, write: Callable[[bytes], None]) -> None:
        self.reader = reader
        self.write = write
        self.ids = 0
        self.updates = 0

    def call(self, method: str, params: Any) -> Any:
        self.ids += 1
        line = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.write(json.dumps(line).encode() + b"\n")
        while raw := self.reader.readline():
            if raw.startswith(UPDATE):
                self.updates += 1
                continue
            message = json.loads(raw)
            if message.get("id") == self.ids and "method" not in message:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"the agent closed the stream during {method}")


def peaks(peer: Peer, pid: int, workspace: Path) -> tuple[float, float]:
    """VmHWM (MB) after a turn whose command printed 1 MB, and after one of 200 MB."""
    peer.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = peer.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    found = []
    for _ in range(2):
        prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "go"}]}
        assert peer.call("session/prompt", prompt) == {"stopReason": "end_turn"}
        status = Path(f"/proc/{pid}/status").read_text()
        peak = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
        found.append(int(peak.split()[1]) / 1024)
    assert peer.updates > 2  # the output was streamed (a frame per 10 ms of it: coalesced)
    return found[0], found[1]


def test_the_daemon_stays_flat_in_a_commands_output(tmp_path: Path) -> None:
    daemon = Daemon(write_script(tmp_path, REPLIES), "--approval", "full-auto")
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(daemon.socket))
            with sock.makefile("rb") as reader:
                small, big = peaks(Peer(reader, sock.sendall), daemon.proc.pid, tmp_path)
    finally:
        assert daemon.stop() == 0
    assert big - small < GROWTH, (small, big)


def test_acp_over_stdio_stays_flat_in_a_commands_output(tmp_path: Path) -> None:
    script = write_script(tmp_path, REPLIES)
    proc = subprocess.Popen(
        [*CLI, "acp", "--script", str(script), "--approval", "full-auto"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    try:
        small, big = peaks(Peer(proc.stdout, write), proc.pid, tmp_path)
    finally:
        stdin.close()
        assert proc.wait(30) == 0
        proc.stdout.close()
    assert big - small < GROWTH, (small, big)


def test_a_client_attaching_mid_command_gets_its_latest_output_not_every_chunk(
    tmp_path: Path,
) -> None:
    """The frames kept for late clients hold one output tail per call, the latest: a
    frame per chunk filled the 32 MiB buffer (and the daemon's memory) with tails that
    the next one replaces."""
    run = "yes 'the quick brown fox' | head -c 20000000; echo output-$((6 * 7))-ends; sleep 30"
    replies = [[{"type": "tool_call", "name": "run_command", "args": {"command": run}}], ["ok"]]
    daemon = Daemon(write_script(tmp_path, replies), "--approval", "full-auto")
    try:
        with socket.socket(socket.AF_UNIX) as first, socket.socket(socket.AF_UNIX) as late:
            first.connect(str(daemon.socket))
            late.connect(str(daemon.socket))
            with first.makefile("rb") as reader, late.makefile("rb") as late_reader:
                driver = Peer(reader, first.sendall)
                driver.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
                session = driver.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
                params = {"sessionId": session["sessionId"]}
                prompt = {**params, "prompt": [{"type": "text", "text": "go"}]}
                first.sendall(json.dumps(request(9, "session/prompt", prompt)).encode() + b"\n")
                while b"output-42-ends" not in reader.readline():
                    pass
                attach = Peer(late_reader, late.sendall)
                attach.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
                tails = attached_tails(late_reader, late.sendall, params)
                cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": params}
                first.sendall(json.dumps(cancel).encode() + b"\n")
                while b'"id":9' not in reader.readline():
                    pass
    finally:
        assert daemon.stop() == 0
    assert len(tails) == 1, len(tails)  # was one per chunk, hundreds
    assert tails[0].endswith("output-42-ends\n")


def request(request_id: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def attached_tails(reader: Readable, write: Callable[[bytes], None], params: Any) -> list[str]:
    """Attach; the output tails among the frames of the turn so far."""
    write(json.dumps(request(1, "_codecoder/session/attach", params)).encode() + b"\n")
    tails = []
    while raw := reader.readline():
        message = json.loads(raw)
        if message.get("id") == 1:
            return tails
        update = message.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "tool_call_update" and update.get("content"):
            tails.append(update["content"][0]["content"]["text"])
    raise AssertionError("the daemon closed the connection")
