"""One huge SSE event through the real provider path (issue 10, item 7).

    .venv/bin/python -m bench.bench_sse_flood [--mb 4 16 32] [--end] [--src DIR]

A raw server on 127.0.0.1 (tests/fakes/raw_server.py) answers a chat request with
`data: {"choices":[{"delta":{"content":"xxxx…` of the given size, sent as 64 KiB HTTP
chunks, with no line end (`--end`: the event then ends with a blank line and is a valid
chunk). A fresh child process streams it through `HttpClient.stream` (pool, chunked
decoder, SSE decoder, chat parser) and reports its CPU seconds (user + system), wall
time, peak RSS (VmHWM: its own, not inherited from this process) and how the stream ended.
`--src` picks the `codecoder` package to measure (a `src` folder, e.g. a worktree of an
older commit), by PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.raw_server import Peer, Server

PIECE = 64 * 1024

CHILD = r"""
import json, resource, sys, time
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ProviderError
from codecoder.providers.http import HttpClient, RetryPolicy
from codecoder.providers.registry import wire_format

url = sys.argv[1]
client = HttpClient(url, retry=RetryPolicy(max_attempts=1))
started = time.monotonic()
outcome, size = "", 0
try:
    for event in client.stream(
        "/v1/chat/completions", b"{}", headers={"Content-Type": "application/json"},
        cancel=CancelToken(), new_parser=wire_format("chat").new_parser, label="bench",
    ):
        size += len(getattr(event, "text", ""))
    outcome = f"ended, {size:,} characters of text"
except ProviderError as exc:
    outcome = f"{exc.kind}: {exc.message}"
wall = time.monotonic() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({
    "cpu": usage.ru_utime + usage.ru_stime, "wall": wall,
    "peak_mb": int(hwm.split()[1]) / 1024, "outcome": outcome,
}))
"""


def flood(megabytes: float, end: bool):
    total = int(megabytes * 1024 * 1024)
    opening = b'data: {"choices":[{"index":0,"delta":{"content":"'
    closing = (
        b'"}}]}\n\ndata: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
        if end
        else b""
    )
    filler = b"x" * PIECE

    def handle(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        sent = 0
        pieces = [opening]
        while sent < total:
            pieces.append(filler[: min(PIECE, total - sent)])
            sent += len(pieces[-1])
            for piece in pieces:
                peer.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            pieces = []
        if closing:
            peer.send(b"%x\r\n%s\r\n" % (len(closing), closing))
        peer.send(b"0\r\n\r\n")

    return handle


def measure(megabytes: float, end: bool, src: str | None) -> dict[str, object]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    with Server(flood(megabytes, end)) as server:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, server.url],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, nargs="+", default=[4, 16, 32])
    parser.add_argument("--end", action="store_true", help="end the event with a blank line")
    parser.add_argument("--src", help="the src folder whose codecoder to measure")
    options = parser.parse_args()
    src = str(Path(options.src).resolve()) if options.src else None
    for megabytes in options.mb:
        figures = measure(megabytes, options.end, src)
        print(
            f"{megabytes:6g} MB event: {figures['cpu']:7.2f} CPU s, {figures['wall']:7.2f} s wall,"
            f" peak RSS {figures['peak_mb']:6.1f} MB; {figures['outcome']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
