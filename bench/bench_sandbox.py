"""What the sandbox costs (issue 15; docs/benchmarks.md, "Sandbox").

    .venv/bin/python -m bench.bench_sandbox [--runs 200] [--loops 5]

- start cost: `bwrap … true` with the very command line a confined run_command gets in a
  fresh git workspace (masks, protected folders, namespaces), against plain `true`, both
  spawned the same way, alternated run by run so the machine's drift cancels: wall time,
  and the CPU time of the spawned processes (their rusage), which a busy machine inflates
  far less; and the same through ProcessManager.run (the whole command path:
  environment, spawn, tree check, reap) with and without the wrap;
- building that command line: the scan for protected folders and the masks, in the small
  workspace and in this repository (with its .venv: thousands of folders), first scan
  and later ones (listings cached by mtime);
- the 20-round echo loop of bench_providers (`codecoder exec`, full-auto, the chat wire),
  and the same loop writing a file (`echo … > round.txt`), each with `--sandbox
  workspace-write` and `--sandbox off`, alternated: wall per round as
  (20-round run - one-reply run) / 20, and first → 21st request / 20 as the server saw it;
  and CPU per round the same way, from the rusage of `codecoder exec` and everything it
  ran (bwrap and the commands included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_providers import DEV_EXE, Target, bench_env
from bench.launcher import Launcher
from tests.fakes.wire_server import Call, Reply, Text, WireServer

from codecoder.kernel.cancel import CancelToken
from codecoder.sandbox.bwrap import Confinement
from codecoder.sandbox.layout import FolderScan, hidden_places
from codecoder.sandbox.probe import require
from codecoder.tools.process import ProcessManager

REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float], unit: str = "ms") -> str:
    return (
        f"median {statistics.median(values):7.2f} {unit}, p90 {percentile(values, 0.9):7.2f} "
        f"{unit} (n={len(values)})"
    )


def children_cpu() -> float:
    """CPU seconds of our waited-for descendants so far (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def spawn_cost(runs: int, workspace: Path) -> dict[str, list[float]]:
    """`true` and the confined `true`, each spawned by subprocess.run, alternated: wall
    ms, and CPU ms of what was spawned."""
    confinement = Confinement("workspace-write", workspace, bwrap=require())
    confined = confinement.wrap(["/usr/bin/true"])
    plain = ["/usr/bin/true"]
    results: dict[str, list[float]] = {"plain": [], "bwrap": [], "plain cpu": [], "bwrap cpu": []}
    for argv in (plain, confined):  # warm the page cache
        subprocess.run(argv, check=True)
    for run in range(runs * 2):
        name, argv = ("plain", plain) if run % 2 == 0 else ("bwrap", confined)
        cpu = children_cpu()
        started = time.perf_counter()
        subprocess.run(argv, check=True)
        results[name].append((time.perf_counter() - started) * 1000)
        results[f"{name} cpu"].append((children_cpu() - cpu) * 1000)
    return results


def command_cost(runs: int, workspace: Path) -> dict[str, list[float]]:
    """`true` through ProcessManager.run, unconfined and confined, alternated."""
    manager = ProcessManager()
    scan = FolderScan()
    confinement = Confinement("workspace-write", workspace, bwrap=require())

    def wrap(argv: list[str]) -> list[str]:
        return confinement.wrap(argv, cwd=workspace, scan=scan)

    results: dict[str, list[float]] = {"plain": [], "confined": []}
    try:
        for first in (None, wrap):  # the watchdog's start and the first scan: not measured
            manager.run("true", cwd=workspace, timeout=10, cancel=CancelToken(), wrap=first)
        for run in range(runs * 2):
            confined = run % 2 == 1
            started = time.perf_counter()
            outcome = manager.run(
                "true",
                cwd=workspace,
                timeout=10,
                cancel=CancelToken(),
                wrap=wrap if confined else None,
            )
            results["confined" if confined else "plain"].append(
                (time.perf_counter() - started) * 1000
            )
            assert outcome.returncode == 0, outcome
    finally:
        manager.close()
    return results


def layout_cost(runs: int, workspace: Path) -> dict[str, list[float]]:
    """Building the command line: the scan (first and cached) and the masks."""
    results: dict[str, list[float]] = {}
    for name, root in (("small", workspace), ("repo", REPO)):
        confinement = Confinement("workspace-write", root, bwrap="bwrap")
        firsts, laters = [], []
        for _ in range(max(3, runs // 20)):
            scan = FolderScan()
            started = time.perf_counter()
            confinement.wrap(["true"], scan=scan)
            firsts.append((time.perf_counter() - started) * 1000)
            for _ in range(5):
                started = time.perf_counter()
                confinement.wrap(["true"], scan=scan)
                laters.append((time.perf_counter() - started) * 1000)
        results[f"{name} first"] = firsts
        results[f"{name} later"] = laters
    masks = []
    for _ in range(runs):
        started = time.perf_counter()
        hidden_places()
        masks.append((time.perf_counter() - started) * 1000)
    results["masks"] = masks
    return results


def folders(root: Path) -> int:
    return sum(1 for _ in os.walk(root))


LINES = {"echo": "echo round {i}", "echo > file": "echo round {i} > round.txt"}
"""The loops' commands: bench_providers' echo, a line that only reads (run read-only,
no checkpoint, with the sandbox on), and one that writes a file of the workspace."""


def echo_loops(loops: int, root: Path, line: str) -> dict[str, dict[str, list[float]]]:
    """bench_providers' one-reply run and 20-round loop of `line` on the chat wire, with
    the sandbox on and off, alternated."""
    results: dict[str, dict[str, list[float]]] = {
        mode: {"one": [], "run": [], "loop": []} for mode in ("workspace-write", "off")
    }
    with WireServer() as server, Launcher(root) as launcher:
        workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=root))
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        target = Target(DEV_EXE, bench_env(root, server.url), workspace, launcher)
        for trial in range(loops * 2 + 2):
            mode = "workspace-write" if trial % 2 == 0 else "off"
            extra = ("--approval", "full-auto", "--sandbox", mode)
            server.enqueue(Reply(parts=(Text("The answer is 42."),)))
            one = target.run("chat", *extra)
            for i in range(20):
                args = json.dumps({"command": line.format(i=i)})
                server.enqueue(Reply(parts=(Call("run_command", args, id=f"call_{i}"),)))
            server.enqueue(Reply(parts=(Text("done"),)))
            run = target.run("chat", *extra)
            posts = [post.received for post in server.posts[-21:]]
            if trial < 2:
                continue  # warm-up: bytecode caches
            results[mode]["one"].append((one.ended - one.started) * 1000)
            results[mode]["run"].append((run.ended - run.started) * 1000)
            results[mode]["loop"].append((posts[-1] - posts[0]) * 1000)
    return results


def echo_cpu(loops: int, root: Path, line: str) -> dict[str, float]:
    """CPU per round of the loop of `line`: (20-round run - one-reply run) / 20, from the
    rusage of codecoder exec and all it ran, sandbox on and off alternated (medians)."""
    cpu: dict[str, dict[str, list[float]]] = {
        mode: {"one": [], "run": []} for mode in ("workspace-write", "off")
    }
    with WireServer() as server:
        workspace = Path(tempfile.mkdtemp(prefix="ws-cpu-", dir=root))
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        env = bench_env(root / f"cpu-{workspace.name}", server.url)
        base = [DEV_EXE, "exec", "-m", "fake-chat/model", "-C", str(workspace)]
        for trial in range(loops * 2 + 2):
            mode = "workspace-write" if trial % 2 == 0 else "off"
            argv = [*base, "--approval", "full-auto", "--sandbox", mode, "task"]
            server.enqueue(Reply(parts=(Text("The answer is 42."),)))
            before = children_cpu()
            subprocess.run(argv, env=env, check=True, capture_output=True)
            one = children_cpu() - before
            for i in range(20):
                args = json.dumps({"command": line.format(i=i)})
                server.enqueue(Reply(parts=(Call("run_command", args, id=f"call_{i}"),)))
            server.enqueue(Reply(parts=(Text("done"),)))
            before = children_cpu()
            subprocess.run(argv, env=env, check=True, capture_output=True)
            run = children_cpu() - before
            if trial >= 2:
                cpu[mode]["one"].append(one * 1000)
                cpu[mode]["run"].append(run * 1000)
    return {
        mode: (statistics.median(f["run"]) - statistics.median(f["one"])) / 20
        for mode, f in cpu.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--loops", type=int, default=5)
    options = parser.parse_args()
    print(f"bwrap: {require()}; python {sys.version.split()[0]}; load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "small"
        workspace.mkdir()
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        counts = (folders(workspace), folders(REPO))
        spawn = spawn_cost(options.runs, workspace)
        commands = command_cost(options.runs // 2, workspace)
        layout = layout_cost(options.runs, workspace)
        loops = {name: echo_loops(options.loops, root, line) for name, line in LINES.items()}
        loop_cpu = {name: echo_cpu(options.loops, root, line) for name, line in LINES.items()}
    started = statistics.median(spawn["bwrap"]) - statistics.median(spawn["plain"])
    print(f"plain `true`                : {summary(spawn['plain'])}")
    print(f"`bwrap … true`              : {summary(spawn['bwrap'])}")
    print(f"  start cost (difference)   : {started:7.2f} ms (target 15 ms)")
    cpu = statistics.median(spawn["bwrap cpu"]) - statistics.median(spawn["plain cpu"])
    print(f"CPU of plain `true`         : {summary(spawn['plain cpu'])}")
    print(f"CPU of `bwrap … true`       : {summary(spawn['bwrap cpu'])}")
    print(f"  start cost in CPU         : {cpu:7.2f} ms")
    print(f"run_command `true`, plain   : {summary(commands['plain'])}")
    print(f"run_command `true`, confined: {summary(commands['confined'])}")
    for name, values in layout.items():
        print(f"command line, {name:<14}: {summary(values)}")
    print(f"folders scanned: small workspace {counts[0]}, this repository {counts[1]}")
    for name, by_mode in loops.items():
        for mode, figures in by_mode.items():
            one = statistics.median(figures["one"])
            per_round = (statistics.median(figures["run"]) - one) / 20
            in_loop = statistics.median(figures["loop"]) / 20
            print(
                f"{name!r} loop, --sandbox {mode:<15}: {per_round:5.1f} ms per round (run -"
                f" one-reply), {in_loop:5.1f} ms (first -> 21st request); one-reply run"
                f" {one:6.1f} ms; CPU {loop_cpu[name][mode]:5.1f} ms per round"
            )


if __name__ == "__main__":
    main()
