"""Two source trees of codecoder, alternated run by run on one machine: does a change
make the one-reply `exec` faster? This machine's speed drifts by a third over an hour,
so before/after figures taken at different times mislead; alternating cancels the drift.

    git worktree add /tmp/before <rev>
    .venv/bin/python -m bench.bench_ab /tmp/before/src src --runs 30 [--wire chat] [--tokens N]

Each run is `python -m codecoder exec` with PYTHONPATH set to the tree's `src` (ahead of
the venv's own install), against the fake wire server of bench_providers. Reported per
tree: median and minimum of launch → first request and launch → exit, and the child's
CPU time (user + system, which the drift moves less than wall time). `--tokens N`: the
answer is N one-token SSE events (as bench_providers' 20,000-token answer) instead of one
sentence, and the figure to read is first request → exit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_providers import WIRES, bench_env
from tests.fakes.wire_server import Reply, Text, Use, WireServer


def one_run(
    server: WireServer, src: str, wire: str, env: dict[str, str], root: Path, *, tokens: int = 0
) -> tuple[float, float, float]:
    """(ms to the first request, ms to exit, CPU ms) of one child."""
    text = Text("tok " * tokens, chunk=4) if tokens else Text("The answer is 42.")
    server.enqueue(Reply(parts=(text, Use(input=10, output=max(tokens, 5)))))
    argv = [sys.executable, "-m", "codecoder", "exec", "-m", f"fake-{wire}/model"]
    argv += ["-C", str(root), "task"]
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, env={**env, "PYTHONPATH": src}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.monotonic()
    assert proc.stderr is not None
    error = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    assert os.waitstatus_to_exitcode(status) == 0, error
    first = server.posts[-1].received
    cpu = (usage.ru_utime + usage.ru_stime) * 1000
    return (first - started) * 1000, (ended - started) * 1000, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs=2, help="the two `src` folders: before, after")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--wire", choices=sorted(WIRES), default="chat")
    parser.add_argument("--tokens", type=int, default=0, help="a long answer of N tokens")
    options = parser.parse_args()
    trees = [str(Path(tree).resolve()) for tree in options.trees]
    with tempfile.TemporaryDirectory() as tmp, WireServer() as server:
        root = Path(tmp)
        env = bench_env(root, server.url)
        results: dict[str, list[tuple[float, float, float]]] = {tree: [] for tree in trees}
        for tree in trees:
            one_run(server, tree, options.wire, env, root)  # warm-up: bytecode caches
        for _ in range(options.runs):
            for tree in trees:
                run = one_run(server, tree, options.wire, env, root, tokens=options.tokens)
                results[tree].append(run)
        for tree, runs in results.items():
            firsts, exits, cpus = zip(*runs, strict=True)
            print(f"{tree}:")
            print(
                f"  first request  median {statistics.median(firsts):6.1f} ms"
                f"  min {min(firsts):6.1f} ms"
            )
            print(
                f"  exit           median {statistics.median(exits):6.1f} ms"
                f"  min {min(exits):6.1f} ms"
            )
            print(f"  child CPU      median {statistics.median(cpus):6.1f} ms")
            if options.tokens:
                streams = [exit_ - first for first, exit_, _ in runs]
                print(f"  request → exit median {statistics.median(streams):6.1f} ms")


if __name__ == "__main__":
    main()
