"""Record, replay and trace figures for docs/benchmarks.md (issue 16).

    .venv/bin/python bench/bench_replay.py [--only rounds|tokens|replay|size] [--reps 7]

- rounds: the process's CPU time per tool round with nothing, with `--trace`, with the
  record (into a real session store, against the same store without it), the variants'
  turns interleaved (`bench_rounds`). Target: tracing costs <= 5%.
- tokens: tokens per CPU second through the loop to a draining client, the same
  variants interleaved the same way. Target: tracing costs <= 10%.
- replay: a recorded 1,000-round session replayed from the store (`replay_session`).
  Target: <= 1 s.
- size: a session of the kind people run (reads of real source files, searches, commands
  with output, edits, answers of ~80 words streamed a token at a time): bytes of the
  record's rows against the bytes of the messages. Target: <= 10%.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from codecoder.app.replay import replay_session
from codecoder.kernel.events import Done, NewToken
from codecoder.kernel.journal import Recorder
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, Tool, ToolContext
from codecoder.kernel.trace import Tracer
from codecoder.providers.scripted import ScriptedProvider, parse_script
from codecoder.sessions import SessionLog, SessionStore
from codecoder.sessions.records import cap_result
from codecoder.tools.base import TypedTool

ROOT = Path(__file__).resolve().parents[1]


class NoArgs(msgspec.Struct):
    pass


class Noop(TypedTool[NoArgs]):
    name = "noop"
    description = "Does nothing."
    risk: Risk = "read"
    args_type = NoArgs

    def call(self, args: NoArgs, ctx: ToolContext) -> ToolResult:
        return tool_result(ctx.call_id, "ok")


Variant = Callable[[Path, SessionStore], dict[str, Any]]
"""The extra AgentLoop arguments of one variant (given a scratch folder and a store)."""


def _plain(tmp: Path, store: SessionStore) -> dict[str, Any]:
    return {"history": SessionLog(store, store.create(tmp, "bench"))}


def _traced(tmp: Path, store: SessionStore) -> dict[str, Any]:
    return {**_plain(tmp, store), "tracer": Tracer(tmp / f"trace-{time.monotonic_ns()}.jsonl")}


def _recorded(tmp: Path, store: SessionStore) -> dict[str, Any]:
    log = SessionLog(store, store.create(tmp, "bench"))
    return {"history": log, "journal": Recorder(log, stored=cap_result)}


VARIANTS: dict[str, Variant] = {"plain": _plain, "traced": _traced, "recorded": _recorded}


def _run(loop: AgentLoop) -> None:
    """One turn, to its end."""
    handle = loop.start()
    handle.send("go")
    while not isinstance(event := handle.next_event(600), Done):
        pass
    handle.shutdown()
    loop.join_readers()
    assert event.reason == "completed", event


@dataclass(frozen=True)
class Cost:
    """One variant's CPU per unit (a tool round, a token): the median over its turns, in
    µs; its change against the first variant, the ratio of the sums over all turns; and a
    95% interval of that change, from its spread between blocks."""

    median_us: float
    change: float
    interval: float


def interleaved(
    variants: dict[str, Variant],
    tmp: Path,
    *,
    blocks: int,
    turns: int,
    turn: list[Any],
    units: int,
    tools: list[Tool],
    text: int | None = None,
) -> dict[str, Cost]:
    """The variants' turns interleaved: one loop per variant, each turn (the replies in
    `turn`, `units` tool rounds or tokens, and `text` characters streamed when given)
    run by each loop in turn, the order rotated from turn to turn (listing two variants
    the other way round moved the figure by up to a point). Paired runs of whole
    1,000-round sessions drifted apart by ±3 points from one run to the next; turns of a
    few milliseconds interleaved put every variant on the same moment of the machine.
    Each block starts new loops (so the history, and the request built from it, stay
    small) and leaves its first two turns out (the first request, each thread's first
    line). CPU time of the process, not wall time, so that other processes on a busy
    machine weigh less."""
    names = list(variants)
    spent: dict[str, list[float]] = {name: [] for name in names}
    sums: dict[str, list[float]] = {name: [] for name in names}
    with SessionStore(tmp / f"interleaved-{time.monotonic_ns()}.sqlite3") as store:
        for _ in range(blocks):
            loops = {
                name: AgentLoop(
                    ScriptedProvider.from_replies(turn * turns),
                    tools,
                    tmp,
                    max_rounds=len(turn),
                    **variant(tmp, store),
                )
                for name, variant in variants.items()
            }
            handles = {name: loop.start() for name, loop in loops.items()}
            gc.collect()
            block = dict.fromkeys(names, 0.0)
            for number in range(turns):
                shift = number % len(names)
                for name in names[shift:] + names[:shift]:
                    started = time.process_time()
                    handles[name].send("go")
                    received = 0
                    while not isinstance(event := handles[name].next_event(600), Done):
                        if type(event) is NewToken:
                            received += len(event.text)
                    elapsed = time.process_time() - started
                    assert event.reason == "completed", event
                    assert text is None or received == text, (name, received, text)
                    if number >= 2:
                        spent[name].append(elapsed * 1e6 / units)
                        block[name] += elapsed
            for name, loop in loops.items():
                handles[name].shutdown()
                loop.join_readers()
                if loop._tracer is not None:  # type: ignore[attr-defined]
                    loop._tracer.close()  # type: ignore[attr-defined]
                sums[name].append(block[name])
    costs = {}
    for name in names:
        changes = [mine / first - 1 for mine, first in zip(sums[name], sums[names[0]], strict=True)]
        costs[name] = Cost(
            median_us=statistics.median(spent[name]),
            change=sum(sums[name]) / sum(sums[names[0]]) - 1,
            interval=2 * statistics.stdev(changes) / len(changes) ** 0.5 if blocks > 1 else 0.0,
        )
    return costs


def bench_rounds(
    blocks: int, turns: int, per_turn: int, tmp: Path, variants: dict[str, Variant] = VARIANTS
) -> dict[str, Cost]:
    turn: list[Any] = [[_call("noop")]] * per_turn + [["ok"]]
    return interleaved(
        variants, tmp, blocks=blocks, turns=turns, turn=turn, units=per_turn, tools=[Noop()]
    )


def bench_tokens(blocks: int, turns: int, per_turn: int, tmp: Path) -> dict[str, Cost]:
    answer = "t " * per_turn
    return interleaved(
        VARIANTS,
        tmp,
        blocks=blocks,
        turns=turns,
        turn=[[answer]],
        units=per_turn,
        tools=[],
        text=len(answer),
    )


def bench_replay(reps: int, rounds: int, tmp: Path) -> tuple[float, str]:
    replies: list[Any] = [
        [f"round {i}: ", {"type": "tool_call", "name": "noop", "args": {}}] for i in range(rounds)
    ] + [["done"]]
    with SessionStore(tmp / "replay.sqlite3") as store:
        log = SessionLog(store, store.create(tmp, "bench"))
        loop = AgentLoop(
            ScriptedProvider.from_replies(replies),
            [Noop()],
            tmp,
            max_rounds=rounds + 1,
            history=log,
            journal=Recorder(log, stored=cap_result),
        )
        _run(loop)
        times = []
        summary = ""
        for _ in range(reps):
            started = time.perf_counter()
            report = replay_session(store, log.session_id)
            times.append(time.perf_counter() - started)
            summary = report.summary()
            assert report.identical, summary
    return statistics.median(times), summary


def bench_size(tmp: Path) -> tuple[int, int, int]:
    """(message bytes, record bytes, rounds) of a typical session."""
    from codecoder.tools.files import EditFile, ReadFile
    from codecoder.tools.process import ProcessManager
    from codecoder.tools.search import Grep
    from codecoder.tools.shell import RunCommand

    ws = tmp / "ws"
    shutil.copytree(ROOT / "src" / "codecoder" / "kernel", ws)
    files = sorted(p.name for p in ws.glob("*.py"))[:8]
    sentence = "the loop reads each file then checks the tests and explains what changed "
    words = (sentence * 6).strip()
    replies: list[Any] = []
    for name in files:
        replies.append({"token_delay": 0.0003, "parts": [words, _call("read_file", path=name)]})
        replies.append([_call("grep", pattern="def ", path=name)])
        replies.append([_call("run_command", command=f"wc -l {name} && head -40 {name}")])
    edit = {"path": files[0], "old_text": "from __future__", "new_text": "from  __future__"}
    replies.append([_call("edit_file", **edit)])
    replies.append({"token_delay": 0.0003, "parts": [words]})
    script = {"format": "codecoder-script/1", "replies": replies}
    manager = ProcessManager()
    tools: list[Tool] = [ReadFile(), Grep(), RunCommand(manager), EditFile()]
    with SessionStore(tmp / "size.sqlite3") as store:
        log = SessionLog(store, store.create(ws, "bench"))
        loop = AgentLoop(
            ScriptedProvider(parse_script(msgspec.json.encode(script).decode())),
            tools,
            ws,
            max_rounds=len(replies) + 1,
            history=log,
            journal=Recorder(log, stored=cap_result),
        )
        _run(loop)
        manager.close()
        conn = store._conn()  # type: ignore[attr-defined]
        messages = conn.execute("SELECT sum(length(body)) FROM messages").fetchone()[0]
        records = conn.execute(
            "SELECT (SELECT coalesce(sum(length(record)), 0) FROM messages)"
            " + (SELECT coalesce(sum(length(body)), 0) FROM records)"
        ).fetchone()[0]  # a message's own record rides in its row; the rest in `records`
    return int(messages), int(records), len(replies)


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def print_rounds(costs: dict[str, Cost]) -> None:
    first = next(iter(costs))
    print(f"CPU per tool round, session store on (median over turns; change against {first}:")
    print("  the ratio of the sums over all turns, 95% interval from the blocks):")
    for name, cost in costs.items():
        change = f"{cost.change * 100:+.1f}% ± {cost.interval * 100:.1f}"
        print(f"  {name:9} {cost.median_us:7.1f} µs  ({change})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("rounds", "tokens", "replay", "size"))
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=5_000, help="tokens: a turn's tokens")
    parser.add_argument("--blocks", type=int, default=20, help="rounds, tokens: new loops")
    parser.add_argument("--turns", type=int, default=52, help="rounds, tokens: a block's turns")
    parser.add_argument("--per-turn", type=int, default=10, help="rounds: a turn's tool rounds")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if options.only in (None, "rounds"):
            print_rounds(bench_rounds(options.blocks, options.turns, options.per_turn, tmp))
        if options.only in (None, "tokens"):
            costs = bench_tokens(options.blocks, options.turns, options.tokens, tmp)
            print("token throughput per CPU second (a turn of one streamed answer; change")
            print("  against plain, from the CPU of all turns, 95% interval from the blocks):")
            for variant, cost in costs.items():
                change = 1 / (1 + cost.change) - 1
                interval = f"{change * 100:+.1f}% ± {cost.interval * 100:.1f}"
                print(f"  {variant:9} {1e6 / cost.median_us:,.0f} tokens/s  ({interval})")
        if options.only in (None, "replay"):
            seconds, summary = bench_replay(options.reps, options.rounds, tmp)
            print(f"replay of a {options.rounds}-round session: {seconds * 1000:.0f} ms")
            print(f"  ({summary})")
        if options.only in (None, "size"):
            messages, records, rounds = bench_size(tmp)
            print(
                f"a typical session ({rounds} rounds): messages {messages:,} B, record "
                f"{records:,} B = {records / messages * 100:.1f}% of the messages"
            )


if __name__ == "__main__":
    main()
