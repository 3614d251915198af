"""Session store figures (issue 5): append latency, and loading a 10,000-message session.

    .venv/bin/python -m bench.bench_store [--appends 3000] [--messages 10000] [--result-kib 2]

Targets: append p99 ≤ 2 ms; resuming a 10,000-message session ≤ 300 ms from launch (the
"cold" row: a fresh interpreter that imports the store, loads and repairs); peak memory
for it ≤ 150 MB. The database lives in a temporary folder on the same disk as /tmp.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from bench.launcher import Launcher

from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall, user_message
from codecoder.kernel.messages import tool_result as result
from codecoder.sessions.repair import repair
from codecoder.sessions.store import SessionStore

COLD = """
import sys, time
from codecoder.sessions.repair import repair
from codecoder.sessions.store import SessionStore
store = SessionStore(sys.argv[1])
history = repair(store.load_messages(sys.argv[2]))
done = time.time()
store.close()
print(done, len(history))
"""


def conversation(count: int, result_kib: int) -> list[Message]:
    """A plausible coding session: user asks, assistant thinks and calls a tool, tool answers.
    The last assistant message's call is left dangling, so repair has work to do."""
    out: list[Message] = []
    output = ("x" * 79 + "\n") * (result_kib * 1024 // 80)
    while len(out) < count:
        n = len(out)
        out.append(user_message(f"Please fix test number {n} in the parser. " * 5, id=n))
        for _ in range(9):
            n = len(out)
            call = ToolCall(id=f"call_{n}", name="read_file", args={"path": f"src/m{n}.py"})
            thought = Reasoning("I should look at the module first. " * 10, "sig" * 60)
            items = (thought, Text("Reading the module. " * 15), call)
            out.append(Message(id=n, role="assistant", items=items))
            out.append(Message(id=n + 1, role="tool", items=(result(call.id, output),)))
    del out[count:]
    if out[-1].role == "tool":
        out.pop()
    return out


def bench_appends(db: Path, count: int, result_kib: int) -> list[float]:
    with SessionStore(db) as store:
        session = store.create("/tmp", "bench/model")
        times: list[float] = []
        for message in conversation(count, result_kib):
            start = time.perf_counter()
            store.append(session, message)
            times.append((time.perf_counter() - start) * 1000)
    return times


def build_session(db: Path, count: int, result_kib: int) -> str:
    with SessionStore(db) as store:
        session = store.create("/tmp", "bench/model")
        for message in conversation(count, result_kib):
            store.append(session, message)
    return session


def warm_load(db: Path, session: str) -> tuple[float, float, int]:
    """Median ms of load + repair in this process, and tracemalloc's peak MB for one."""
    with SessionStore(db) as store:
        runs = []
        loaded = 0
        for _ in range(5):
            start = time.perf_counter()
            loaded = len(repair(store.load_messages(session)))
            runs.append((time.perf_counter() - start) * 1000)
        tracemalloc.start()
        repair(store.load_messages(session))
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return statistics.median(runs), peak, loaded


def cold_load(db: Path, session: str) -> tuple[float, float]:
    """Launch of a fresh interpreter to a repaired history: ms, and its peak RSS in MB
    (started through bench/launcher.py: see there why)."""
    runs = []
    peak = 0.0
    with Launcher(db.parent) as launcher:
        for _ in range(5):
            start = time.time()
            run = launcher.run([sys.executable, "-c", COLD, str(db), session], dict(os.environ))
            assert run.returncode == 0, run.stderr
            runs.append((float(run.stdout.split()[0]) - start) * 1000)
            peak = max(peak, run.peak_mb)
    return statistics.median(runs), peak


def main() -> None:
    parser = argparse.ArgumentParser(description="Session store figures (issue 5).")
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--result-kib", type=int, default=2)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.sqlite3"
        times = sorted(bench_appends(db, opts.appends, opts.result_kib))
        p50, p99 = times[len(times) // 2], times[int(len(times) * 0.99)]
        session = build_session(db, opts.messages, opts.result_kib)
        warm_ms, warm_peak, loaded = warm_load(db, session)
        cold_ms, cold_rss = cold_load(db, session)
        size = db.stat().st_size / 2**20
    rows = [
        (f"append ({len(times)} msgs)", f"p50 {p50:.3f} ms  p99 {p99:.3f} ms", "p99 ≤ 2 ms"),
        ("", f"max {times[-1]:.3f} ms", ""),
        (f"load+repair {loaded} msgs, warm", f"{warm_ms:.1f} ms", ""),
        ("  tracemalloc peak", f"{warm_peak:.1f} MB", "≤ 150 MB"),
        ("resume from launch, cold", f"{cold_ms:.1f} ms", "≤ 300 ms"),
        ("  peak RSS of that process", f"{cold_rss:.1f} MB", "≤ 150 MB"),
        ("database size", f"{size:.1f} MB ({opts.result_kib} KiB per tool result)", ""),
    ]
    for name, value, target in rows:
        print(f"{name:<34} {value:<40} {target}")


if __name__ == "__main__":
    main()
