"""What `codecoder batch` costs and gains (docs/benchmarks.md, "Batch"; issue 19).

    .venv/bin/python bench/bench_batch.py [--tasks 100] [--blocks 3] [--parallel 2]
    .venv/bin/python bench/bench_batch.py --launchers 20

N scripted one-reply tasks on one small repository, three ways, alternated in blocks so
that a change in the machine's load hits all three alike:

- sequential: `codecoder exec --json --script S -C REPO TASK` N times, one after another
  (a bare exec: no clone, no diff, a session store that already exists);
- pool: `codecoder batch TASKS --parallel P` (each task cloned, run, diffed, its session
  exported, its clone removed; the zygote's start included);
- pool, one at a time: the same with `--parallel 1`; (its wall time - the sequential
  one's) / N is the pool's overhead per task beyond a bare exec.

With `--launchers N`, only this: one task through `run_task` N times with exec forked from
the zygote and N times as a fresh `python -m codecoder exec`, alternated (ADR 0005).

Targets (issue 19): pool ≥ 1.6x faster than sequential; overhead ≤ 30 ms per task. The
batch's own git work per task (clone, diff; the part that forking from the zygote pays
for) is timed alone too, so the net figure can be read against its parts. Medians of the
blocks, with the load average before and after each, because the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codecoder.batch.launch import Launcher, SubprocessLauncher, ZygoteLauncher
from codecoder.batch.runner import TaskControl, run_task
from codecoder.batch.tasks import load_tasks
from codecoder.batch.workspace import clone, diff, remove_tree

CLI = [sys.executable, "-m", "codecoder"]


def setup(root: Path, tasks: int) -> tuple[Path, Path, Path]:
    repo = root / "repo"
    repo.mkdir()
    for n in range(20):
        (repo / f"module_{n}.py").write_text(f"VALUE = {n}\n" * 50)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=B"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=repo, check=True)
    script = root / "reply.json"
    script.write_text(json.dumps([["Done."]]))
    lines = [
        {"id": f"task-{n}", "repo": "repo", "task": "say done", "script": "reply.json"}
        for n in range(tasks)
    ]
    tasks_file = root / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return repo, script, tasks_file


def sequential(repo: Path, script: Path, tasks: int) -> float:
    started = time.perf_counter()
    for _ in range(tasks):
        subprocess.run(
            [*CLI, "exec", "--json", "--script", str(script), "-C", str(repo), "say done"],
            stdout=subprocess.DEVNULL,
            check=True,
        )
    return time.perf_counter() - started


def pool(tasks_file: Path, parallel: int, out: Path) -> float:
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    subprocess.run(
        [*CLI, "batch", str(tasks_file), "-o", str(out), "--parallel", str(parallel)],
        stderr=subprocess.DEVNULL,
        check=True,
    )
    took = time.perf_counter() - started
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(tasks_file.read_text().splitlines())
    assert all(r["status"] == "passed" for r in results), "a task did not pass"
    return took


def git_work(repo: Path, root: Path, count: int = 20) -> float:
    """Median ms of one task's clone + diff + removal, alone."""
    times = []
    for n in range(count):
        started = time.perf_counter()
        work = root / f"git-{n}"
        base = clone(str(repo), None, work / "workspace")
        diff(work / "workspace", base, work / "diff.git")
        remove_tree(work)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def launchers(tasks_file: Path, count: int) -> None:
    """One task through run_task, exec forked from the zygote or started fresh."""
    spec = load_tasks(tasks_file)[0]
    zygote = ZygoteLauncher()
    run_task(spec, zygote, TaskControl())  # the zygote's own start is paid once
    ways: list[tuple[str, Launcher]] = [("zygote", zygote), ("subprocess", SubprocessLauncher())]
    times: dict[str, list[float]] = {name: [] for name, _ in ways}
    before = os.getloadavg()[0]
    for _ in range(count):
        for name, launcher in ways:
            started = time.perf_counter()
            assert run_task(spec, launcher, TaskControl()).result.status == "passed"
            times[name].append(time.perf_counter() - started)
    zygote.close()
    for name, values in times.items():
        print(f"{name}: median {statistics.median(values) * 1000:.0f} ms a task (n={count})")
    print(f"load average {before:.1f} → {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--launchers", type=int, default=0, metavar="N")
    args = parser.parse_args()
    n = args.tasks
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as temp:
        root = Path(temp)
        os.environ["XDG_DATA_HOME"] = str(root / "data")  # the bare execs' store
        os.environ["XDG_CONFIG_HOME"] = str(root / "config")
        repo, script, tasks_file = setup(root, n)
        if args.launchers:
            launchers(tasks_file, args.launchers)
            return
        print(f"{n} one-reply tasks, {os.cpu_count()} cores, {args.blocks} blocks, alternated")
        seq, par, one, loads = [], [], [], []
        for block in range(args.blocks):
            before = os.getloadavg()[0]
            seq.append(sequential(repo, script, n))
            par.append(pool(tasks_file, args.parallel, root / "out.jsonl"))
            one.append(pool(tasks_file, 1, root / "out1.jsonl"))
            after = os.getloadavg()[0]
            loads.append((before, after))
            print(
                f"block {block + 1}: sequential {seq[-1]:.1f} s, pool --parallel "
                f"{args.parallel} {par[-1]:.1f} s, pool --parallel 1 {one[-1]:.1f} s "
                f"(load {before:.1f} → {after:.1f})",
                flush=True,
            )
        s, p, o = statistics.median(seq), statistics.median(par), statistics.median(one)
        print(f"sequential exec: median {s:.1f} s ({s / n * 1000:.0f} ms a task)")
        print(f"pool --parallel {args.parallel}: median {p:.1f} s → {s / p:.2f}x faster")
        overhead = (o - s) / n * 1000
        print(f"pool --parallel 1: median {o:.1f} s → {overhead:+.0f} ms a task beyond exec")
        print(f"clone + diff + removal alone: median {git_work(repo, root):.0f} ms a task")
        spread = [x for pair in loads for x in pair]
        print(f"load average (1 min) during the blocks: {min(spread):.1f} to {max(spread):.1f}")


if __name__ == "__main__":
    main()
