"""The HTTP layer alone on a token flood: CPU to read 20,000 one-token chunks, per tree.

    .venv/bin/python -m bench.bench_chunks /tmp/before/src src [--runs 15]

A server process writes a chunked event stream (one SSE event per chunk, in 4 KiB
writes) to 127.0.0.1; a fresh interpreter per run, with PYTHONPATH set to a tree's
`src`, reads it through `pool.Pool` and reports the CPU time of the read (connect to the
end of the body) and how many pieces `iter_bytes` gave. Trees alternate run by run, so
the machine's drift cancels. This is the per-chunk cost that the 20,000-token answer of
bench_providers carries, without start-up, the SSE decoder or the kernel.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
from pathlib import Path

TOKENS = 20_000
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
BODY = b"%x\r\n%s\r\n" % (len(EVENT), EVENT) * TOKENS + b"0\r\n\r\n"

CLIENT = """
import sys, time
from codecoder.providers.pool import Pool
pool = Pool(connect=5, read=5, write=5, user_agent="bench")
started = time.process_time()
response = pool.request("GET", sys.argv[1], headers={})
pieces = size = 0
for piece in response.iter_bytes():
    pieces += 1
    size += len(piece)
print((time.process_time() - started) * 1000, pieces, size)
"""


def serve(listener: socket.socket, count: int) -> None:
    for _ in range(count):
        sock, _ = listener.accept()
        with sock:
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(65536)
            sock.sendall(HEAD)
            for start in range(0, len(BODY), 4096):
                sock.sendall(BODY[start : start + 4096])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="+", help="`src` folders to compare")
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    trees = [str(Path(tree).resolve()) for tree in options.trees]
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    server = threading.Thread(target=serve, args=(listener, options.runs * len(trees)))
    server.start()  # a thread of this process; the measured client is another process
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results: dict[str, list[tuple[float, int]]] = {tree: [] for tree in trees}
    for _ in range(options.runs):
        for tree in trees:
            out = subprocess.run(
                [sys.executable, "-c", CLIENT, url],
                env={**env, "PYTHONPATH": tree},
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            assert int(out[2]) == len(EVENT) * TOKENS
            results[tree].append((float(out[0]), int(out[1])))
    server.join()
    listener.close()
    for tree, runs in results.items():
        cpu = statistics.median(run[0] for run in runs)
        pieces = statistics.median(run[1] for run in runs)
        print(f"{tree}: CPU median {cpu:6.1f} ms, min {min(r[0] for r in runs):6.1f} ms, ", end="")
        print(f"{pieces:.0f} pieces for {TOKENS:,} chunks")


if __name__ == "__main__":
    main()
