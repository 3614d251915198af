"""What the command safety of issue 10 costs (docs/benchmarks.md, "Commands").

    .venv/bin/python bench/bench_commands.py [--firsts 20] [--runs 300]

- the first command of a fresh process (`true` through ProcessManager.run: subreaper,
  watchdog start, environment, spawn, reap), in a new interpreter per trial, alternating
  with the watchdog on and off;
- later commands (`true`), same process, watchdog on and off alternating per command;
- the watchdog alone: its start (`Popen` of /bin/sh) and close; one command's two
  registration writes; its memory (VmRSS of sh);
- building a command's environment (scrub + git settings) from this process's
  environment, and the walk for the repository top (once per workspace).
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

from codecoder.kernel.cancel import CancelToken
from codecoder.tools.environment import ChildEnvironment, git_ceiling, scrub
from codecoder.tools.process import ProcessManager
from codecoder.tools.watchdog import Watchdog

FIRST = r"""
import json, sys, time
from pathlib import Path
from codecoder.kernel.cancel import CancelToken
from codecoder.tools.process import ProcessManager
manager = ProcessManager(watchdog=sys.argv[1] == "on")
cwd = Path(sys.argv[2])
times = []
for command in ("true", "sleep 0.05", "true"):
    started = time.perf_counter()
    outcome = manager.run(command, cwd=cwd, timeout=10, cancel=CancelToken())
    times.append((time.perf_counter() - started) * 1000)
    assert outcome.returncode == 0, outcome
manager.close()
print(json.dumps(times))
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float], unit: str = "ms") -> str:
    return (
        f"median {statistics.median(values):.3f} {unit}, p90 {percentile(values, 0.9):.3f} {unit}"
        f" (n={len(values)})"
    )


def bench_first(trials: int, cwd: Path) -> dict[str, list[list[float]]]:
    """Per mode, per trial, in a fresh interpreter: the first `true` (which starts the
    watchdog), then `sleep 0.05`, then `true` again."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results: dict[str, list[list[float]]] = {"on": [], "off": []}
    for trial in range(trials * 2 + 2):
        mode = "on" if trial % 2 == 0 else "off"
        out = subprocess.run(
            [sys.executable, "-c", FIRST, mode, str(cwd)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        if trial >= 2:  # the first pair warms the bytecode caches
            results[mode].append(json.loads(out.stdout))
    return results


def bench_later(runs: int, cwd: Path) -> dict[str, list[float]]:
    managers = {"on": ProcessManager(), "off": ProcessManager(watchdog=False)}
    results: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for manager in managers.values():  # the first command of each is not measured
            manager.run("true", cwd=cwd, timeout=10, cancel=CancelToken())
        for run in range(runs * 2):
            mode = "on" if run % 2 == 0 else "off"
            started = time.perf_counter()
            managers[mode].run("true", cwd=cwd, timeout=10, cancel=CancelToken())
            results[mode].append((time.perf_counter() - started) * 1000)
    finally:
        for manager in managers.values():
            manager.close()
    return results


def bench_watchdog(trials: int) -> dict[str, list[float]]:
    starts: list[float] = []
    closes: list[float] = []
    rss: list[float] = []
    for _ in range(trials):
        watchdog = Watchdog()
        watchdog.started(4_000_000, "0" * 32)  # a group id no process has
        began = time.perf_counter()
        watchdog.start()
        starts.append((time.perf_counter() - began) * 1000)
        pid = watchdog.pid
        assert pid is not None
        time.sleep(0.01)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss.append(int(line.split()[1]) / 1024)
        watchdog.ended(4_000_000)
        began = time.perf_counter()
        watchdog.close()
        closes.append((time.perf_counter() - began) * 1000)
    watchdog = Watchdog()
    watchdog.start()
    writes: list[float] = []
    for n in range(1000):
        began = time.perf_counter()
        watchdog.started(1_000 + n, "f" * 32)
        watchdog.ended(1_000 + n)
        writes.append((time.perf_counter() - began) * 1_000_000)
        time.sleep(0.0005)  # commands take milliseconds: the sh reads at that pace
    watchdog.close()
    return {"start": starts, "close": closes, "rss": rss, "writes": writes}


def bench_environment(runs: int, workspace: Path) -> dict[str, list[float]]:
    environment = ChildEnvironment()
    environment.for_workspace(workspace)  # the walk, once
    builds: list[float] = []
    scrubs: list[float] = []
    walks: list[float] = []
    for _ in range(runs):
        began = time.perf_counter()
        environment.for_workspace(workspace)
        builds.append((time.perf_counter() - began) * 1_000_000)
        began = time.perf_counter()
        scrub(os.environ)
        scrubs.append((time.perf_counter() - began) * 1_000_000)
        began = time.perf_counter()
        git_ceiling(workspace)
        walks.append((time.perf_counter() - began) * 1_000_000)
    return {"build": builds, "scrub": scrubs, "walk": walks}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firsts", type=int, default=20)
    parser.add_argument("--runs", type=int, default=300)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        deep = cwd / "repo" / "a" / "b" / "c"
        deep.mkdir(parents=True)
        (cwd / "repo" / ".git").mkdir()
        first = bench_first(options.firsts, cwd)
        later = bench_later(options.runs, cwd)
        watchdog = bench_watchdog(options.firsts)
        environment = bench_environment(options.runs * 10, deep)
    print(f"environment variables here: {len(os.environ)}")
    for position, name in enumerate(("first `true`", "then `sleep 0.05`", "then `true`")):
        for mode in ("on", "off"):
            times = [trial[position] for trial in first[mode]]
            print(f"{name:<17}, watchdog {mode:<3}: {summary(times)}")
    print(f"later command, watchdog on : {summary(later['on'])}")
    print(f"later command, watchdog off: {summary(later['off'])}")
    print(f"watchdog start (Popen sh)  : {summary(watchdog['start'])}")
    print(f"watchdog close (EOF, exit) : {summary(watchdog['close'])}")
    print(f"watchdog RSS               : {summary(watchdog['rss'], 'MB')}")
    print(f"two registration writes    : {summary(watchdog['writes'], 'µs')}")
    print(f"command environment build  : {summary(environment['build'], 'µs')}")
    print(f"  of which scrub           : {summary(environment['scrub'], 'µs')}")
    print(f"repository walk (4 levels) : {summary(environment['walk'], 'µs')}")


if __name__ == "__main__":
    main()
