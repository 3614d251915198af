"""What the plan runner costs (docs/benchmarks.md, "Plans"; issue 14).

    .venv/bin/python bench/bench_plan.py [--gates 200] [--blocks 5] [--plans 20]

- per gate: a milestone of `true` gates through PlanRunner (a consumer draining its
  stream, as a face does), against `true` through ProcessManager.run directly, in
  alternating blocks in one process; the overhead is the difference of the medians of
  the time from one gate's end to the next's (target ≤ 5 ms);
- a 50-milestone plan's bookkeeping, all of it: reading and checking the file, recording
  the run, and for every milestone the turn count, the attempt, the status and the
  events, through a real SessionStore (a file in a temp folder), with an agent that ends
  each turn at once (a fake of the runner's AgentPort: what is timed is the runner, not a
  model) and no gates (target ≤ 50 ms in all);
- the same 50 milestones as turns of a real AgentLoop on the scripted provider with the
  session store, through the runner and, alternated, sent one after another by hand the
  way `exec` sends one task: the difference is the runner's share of a real run.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from queue import SimpleQueue

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, Done
from codecoder.plan.events import GateFinished, PlanFinished
from codecoder.plan.progress import StoreProgress, begin_run
from codecoder.plan.runner import PlanRunner
from codecoder.plan.spec import load_plan, parse_plan
from codecoder.sessions import SessionLog, SessionStore
from codecoder.tools.process import ProcessManager


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.2f} ms, p90 {percentile(values, 0.9):.2f} ms"
        f" (n={len(values)})"
    )


class InstantAgent:
    """An AgentPort whose every turn ends at once (Done, completed)."""

    def __init__(self) -> None:
        self._events: SimpleQueue[AgentEvent] = SimpleQueue()

    def send(self, text: str) -> None:
        self._events.put(Done(cancelled=False, reason="completed"))

    def cancel(self) -> None:
        return None

    def next_event(self, timeout: float | None = None) -> AgentEvent | None:
        return self._events.get(timeout=timeout)


def gate_plan(count: int) -> str:
    gates = ", ".join(['"true"'] * count)
    return f'[[milestones]]\nname = "gates"\ntask = "t"\ngates = [{gates}]\n'


def runner_gates(manager: ProcessManager, cwd: Path, count: int) -> list[float]:
    """Time from one GateFinished to the next, as the consumer receives them (ms)."""
    plan = parse_plan(gate_plan(count).encode(), "bench.toml")
    runner = PlanRunner(plan, InstantAgent(), manager, cwd)
    runner.start()
    stamps: list[float] = []
    for event in runner.events():
        if isinstance(event, GateFinished):
            assert event.exit_code == 0, event
            stamps.append(time.perf_counter())
    runner.join()
    assert runner.status == "passed"
    return [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]


def direct_gates(manager: ProcessManager, cwd: Path, count: int) -> list[float]:
    stamps: list[float] = []
    for _ in range(count):
        outcome = manager.run("true", cwd=cwd, timeout=60, cancel=CancelToken(), workspace=cwd)
        assert outcome.returncode == 0
        stamps.append(time.perf_counter())
    return [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]


def bench_gates(cwd: Path, count: int, blocks: int) -> tuple[list[float], list[float]]:
    manager = ProcessManager()
    try:
        direct_gates(manager, cwd, 10)  # the watchdog and the subreaper, once
        runner: list[float] = []
        direct: list[float] = []
        for _ in range(blocks):
            runner += runner_gates(manager, cwd, count)
            direct += direct_gates(manager, cwd, count)
    finally:
        manager.close()
    return runner, direct


def fifty(count: int = 50) -> str:
    parts = ['title = "Fifty"\nmax_attempts = 3\n']
    for n in range(count):
        parts.append(f'[[milestones]]\nname = "m{n}"\ntask = "Do step {n} of the job."\n')
    return "\n".join(parts)


def bookkeeping(folder: Path, trial: int, *, store_it: bool = True) -> float:
    """One 50-milestone plan, from the file to PlanFinished (ms); without the store when
    `store_it` is false."""
    path = folder / f"plan{trial}.toml"
    path.write_text(fifty())
    with SessionStore(folder / f"store{trial}.sqlite3") as store:
        session = store.create(folder, "scripted")  # as build_agent does, before the plan
        started = time.perf_counter()
        plan = load_plan(path)
        progress = None
        if store_it:
            run_id = begin_run(store, session, folder, plan)
            progress = StoreProgress(store, run_id, SessionLog(store, session))
        runner = PlanRunner(plan, InstantAgent(), ProcessManager(), folder, progress=progress)
        runner.start()
        last = None
        for event in runner.events():
            last = event
        elapsed = (time.perf_counter() - started) * 1000
        runner.join()
    assert isinstance(last, PlanFinished) and last.passed == 50, last
    return elapsed


def real_turns(folder: Path, trial: int, through_runner: bool) -> float:
    """50 one-reply turns of a real AgentLoop with the store (ms), through the runner or
    sent by hand."""
    from codecoder.kernel.loop import AgentLoop
    from codecoder.providers.scripted import ScriptedProvider

    plan = parse_plan(fifty().encode(), "fifty.toml")
    replies = [[f"Step {n} done."] for n in range(50)]
    mode = "runner" if through_runner else "direct"
    with SessionStore(folder / f"real-{mode}-{trial}.sqlite3") as store:
        session = store.create(folder, "scripted")
        log = SessionLog(store, session)
        loop = AgentLoop(ScriptedProvider.from_replies(replies), [], folder, history=log)
        handle = loop.start()
        try:
            started = time.perf_counter()
            if through_runner:
                run_id = begin_run(store, session, folder, plan)
                progress = StoreProgress(store, run_id, log)
                runner = PlanRunner(plan, handle, ProcessManager(), folder, progress=progress)
                runner.start()
                for _ in runner.events():
                    pass
                runner.join()
                assert runner.status == "passed"
            else:
                for milestone in plan.milestones:
                    log.begin_turn()
                    handle.send(milestone.task)
                    events = handle.wait_done()
                    assert isinstance(events[-1], Done) and events[-1].reason == "completed"
            elapsed = (time.perf_counter() - started) * 1000
        finally:
            handle.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gates", type=int, default=200, help="gates per block")
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--plans", type=int, default=20, help="50-milestone plans per figure")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runner, direct = bench_gates(folder, args.gates, args.blocks)
        overhead = statistics.median(runner) - statistics.median(direct)
        print(f"gate `true` through PlanRunner:      {summary(runner)}")
        print(f"`true` through ProcessManager.run:   {summary(direct)}")
        print(f"runner overhead per gate (medians):  {overhead:.3f} ms  (target <= 5 ms)")

        bookkeeping(folder, -1)  # warm: imports, first store
        books = [bookkeeping(folder, trial) for trial in range(args.plans)]
        print(f"50-milestone plan, bookkeeping:      {summary(books)}  (target <= 50 ms)")
        bare = [bookkeeping(folder, 1000 + trial, store_it=False) for trial in range(args.plans)]
        print(f"the same without the store:          {summary(bare)}")

        real_turns(folder, -1, True)
        real_turns(folder, -2, False)
        through: list[float] = []
        by_hand: list[float] = []
        for trial in range(args.plans):
            through.append(real_turns(folder, trial, True))
            by_hand.append(real_turns(folder, trial, False))
        share = statistics.median(through) - statistics.median(by_hand)
        print(f"50 real turns through the runner:    {summary(through)}")
        print(f"50 real turns sent by hand:          {summary(by_hand)}")
        print(f"the runner's share of 50 real turns: {share:.2f} ms")


if __name__ == "__main__":
    main()
