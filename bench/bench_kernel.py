"""Kernel figures for docs/benchmarks.md (issue 2).

    .venv/bin/python bench/bench_kernel.py [--trials 200] [--rounds 1000]

- cancel → Done{cancelled} latency (p50/p99/max over N trials) during a token flood, a
  silent stream and a running command that honours SIGTERM;
- kernel cost per tool round (scripted provider, trivial tool);
- event throughput: streamed tokens delivered to a consumer that drains the channel,
  without a history and with the session store as history (the reply drafted as it
  streams, kernel.loop.DRAFT_EVERY).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from codecoder.kernel.events import Done, NewToken, ToolStarted
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, Tool, ToolContext
from codecoder.providers.scripted import ScriptedProvider
from codecoder.sessions import SessionLog, SessionStore
from codecoder.tools.base import TypedTool
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand


class NoArgs(msgspec.Struct):
    pass


class Noop(TypedTool[NoArgs]):
    name = "noop"
    description = "Does nothing."
    risk: Risk = "read"
    args_type = NoArgs

    def call(self, args: NoArgs, ctx: ToolContext) -> ToolResult:
        return tool_result(ctx.call_id, "ok")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cancel_trial(replies: list[Any], tools: list[Tool], ready: type, workspace: Path) -> float:
    """Milliseconds from cancel() to the consumer holding Done{cancelled}."""
    loop = AgentLoop(ScriptedProvider.from_replies(replies), tools, workspace)
    handle = loop.start()
    handle.send("go")
    while not isinstance(handle.next_event(10), ready):
        pass
    stamp: list[float] = []

    def cancel() -> None:
        stamp.append(time.perf_counter())
        handle.cancel()

    timer = threading.Timer(random.uniform(0.002, 0.02), cancel)
    timer.start()
    while True:
        event = handle.next_event(10)
        if isinstance(event, Done):
            ended = time.perf_counter()
            break
    timer.join()
    assert event.cancelled, event
    handle.shutdown()
    loop.join_readers()
    return (ended - stamp[0]) * 1000


def bench_cancel(trials: int, workspace: Path) -> dict[str, list[float]]:
    manager = ProcessManager()
    cases: dict[str, tuple[list[Any], list[Tool], type]] = {
        "token flood": ([["tok " * 2_000_000]], [], NewToken),
        "silent stream": ([["hi ", {"type": "sleep", "seconds": 60}]], [], NewToken),
        "running command": (
            [[{"type": "tool_call", "name": "run_command", "args": {"command": "sleep 60"}}]],
            [RunCommand(manager)],
            ToolStarted,
        ),
    }
    results: dict[str, list[float]] = {}
    for name, (replies, tools, ready) in cases.items():
        results[name] = [cancel_trial(replies, tools, ready, workspace) for _ in range(trials)]
    return results


def bench_rounds(rounds: int, workspace: Path) -> float:
    """Milliseconds of kernel time per tool round."""
    replies: list[Any] = [[{"type": "tool_call", "name": "noop", "args": {}}]] * rounds + [["done"]]
    loop = AgentLoop(
        ScriptedProvider.from_replies(replies), [Noop()], workspace, max_rounds=rounds + 1
    )
    handle = loop.start()
    started = time.perf_counter()
    handle.send("go")
    events = handle.wait_done(600)
    elapsed = time.perf_counter() - started
    handle.shutdown()
    assert isinstance(events[-1], Done) and events[-1].reason == "completed", events[-1]
    return elapsed * 1000 / rounds


def bench_throughput(tokens: int, workspace: Path, *, store: bool = False) -> tuple[float, int]:
    """Streamed tokens per second delivered through the loop to a draining consumer;
    `store`: with the session store as its history (the reply drafted as it streams)."""
    history = None
    if store:
        opened = SessionStore(workspace / "sessions.sqlite3")
        history = SessionLog(opened, opened.create(workspace, "bench"))
    provider = ScriptedProvider.from_replies([["t " * tokens]])
    loop = AgentLoop(provider, [], workspace, history=history)
    handle = loop.start()
    started = time.perf_counter()
    handle.send("go")
    received = 0
    events = 0
    while True:
        event = handle.next_event(60)
        if isinstance(event, NewToken):
            received += len(event.text) // 2
            events += 1
        elif isinstance(event, Done):
            break
    elapsed = time.perf_counter() - started
    handle.shutdown()
    if history is not None:
        history.store.close()
    assert received == tokens, (received, tokens)
    return tokens / elapsed, events


def bench_channel(events: int) -> float:
    """Raw event channel: NewToken values through the loop's queue type to a consumer
    thread that drains it (no coalescing), events per second."""
    from queue import SimpleQueue

    channel: SimpleQueue[object] = SimpleQueue()
    end = object()

    def consume() -> None:
        while channel.get() is not end:
            pass

    consumer = threading.Thread(target=consume)
    consumer.start()
    started = time.perf_counter()
    for _ in range(events):
        channel.put(NewToken("t"))
    channel.put(end)
    consumer.join()
    return events / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        print(f"cancel -> Done latency, {options.trials} trials each (ms):")
        for name, values in bench_cancel(options.trials, workspace).items():
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            print(f"  {name:16} p50 {p50:6.2f}  p99 {p99:6.2f}  max {max(values):6.2f}")
        per_round = bench_rounds(options.rounds, workspace)
        print(f"kernel cost per tool round ({options.rounds} rounds): {per_round:.3f} ms")
        rate, events = bench_throughput(options.tokens, workspace)
        print(
            f"event throughput: {rate:,.0f} tokens/s ({options.tokens:,} tokens, {events:,} events)"
        )
        rate, events = bench_throughput(options.tokens, workspace, store=True)
        print(f"  with the session store as history: {rate:,.0f} tokens/s ({events:,} events)")
        raw = bench_channel(options.tokens)
        print(f"raw event channel, one event per token: {raw:,.0f} events/s")


if __name__ == "__main__":
    main()
