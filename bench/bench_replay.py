"""Record, replay and trace figures for docs/benchmarks.md (issue 16).

    .venv/bin/python bench/bench_replay.py [--only rounds|tokens|replay|size] [--reps 7]

- rounds: the process's CPU time per tool round with nothing, with `--trace`, with the
  record (into a real session store, against the same store without it); the variants
  alternate, each the median of --reps runs of 1,000 rounds. Target: tracing costs <= 5%.
- tokens: tokens per CPU second through the loop to a draining client, the same
  variants. Target: tracing costs <= 10%.
CPU time rather than wall time, so that a busy machine weighs less on the comparison.
- replay: a recorded 1,000-round session replayed from the store (`replay_session`).
  Target: <= 1 s.
- size: a session of the kind people run (reads of real source files, searches, commands
  with output, edits, answers of ~80 words streamed a token at a time): bytes of the
  record's rows against the bytes of the messages. Target: <= 10%.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
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


def _run(loop: AgentLoop, count_tokens: bool = False) -> tuple[float, int]:
    """(CPU seconds of this process, tokens received): CPU time, not wall time, so that
    other processes on a busy machine weigh less on the comparison."""
    handle = loop.start()
    started = time.process_time()
    handle.send("go")
    tokens = 0
    while True:
        event = handle.next_event(600)
        if count_tokens and isinstance(event, NewToken):
            tokens += len(event.text) // 2
        if isinstance(event, Done):
            break
    elapsed = time.process_time() - started
    handle.shutdown()
    loop.join_readers()
    assert isinstance(event, Done) and event.reason == "completed", event
    tracer = loop._tracer  # type: ignore[attr-defined]
    if tracer is not None:
        tracer.close()
    return elapsed, tokens


def bench_rounds(reps: int, rounds: int, tmp: Path) -> dict[str, tuple[float, float]]:
    replies: list[Any] = [[{"type": "tool_call", "name": "noop", "args": {}}]] * rounds + [["ok"]]
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with SessionStore(tmp / "rounds.sqlite3") as store:
        for _ in range(reps):
            for name, variant in VARIANTS.items():  # alternated, so drift hits each alike
                loop = AgentLoop(
                    ScriptedProvider.from_replies(replies),
                    [Noop()],
                    tmp,
                    max_rounds=rounds + 1,
                    **variant(tmp, store),
                )
                elapsed, _ = _run(loop)
                samples[name].append(elapsed * 1000 / rounds)
    return _summary(samples)


def _summary(samples: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """Each variant's median, and the median of its change against plain within the
    same repetition (paired: a machine that drifts between repetitions moves both)."""
    plain = samples["plain"]
    return {
        name: (
            statistics.median(values),
            statistics.median(value / base - 1 for value, base in zip(values, plain, strict=True)),
        )
        for name, values in samples.items()
    }


def bench_tokens(reps: int, tokens: int, tmp: Path) -> dict[str, tuple[float, float]]:
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with SessionStore(tmp / "tokens.sqlite3") as store:
        for _ in range(reps):
            for name, variant in VARIANTS.items():
                loop = AgentLoop(
                    ScriptedProvider.from_replies([["t " * tokens]]), [], tmp, **variant(tmp, store)
                )
                elapsed, received = _run(loop, count_tokens=True)
                assert received == tokens, (received, tokens)
                samples[name].append(tokens / elapsed)
    return _summary(samples)


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("rounds", "tokens", "replay", "size"))
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=200_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if options.only in (None, "rounds"):
            per = bench_rounds(options.reps, options.rounds, tmp)
            print(
                f"CPU time per tool round ({options.rounds} rounds, store on, median; "
                "change: median of the changes within a repetition):"
            )
            for variant, (value, change) in per.items():
                print(f"  {variant:9} {value:.3f} ms  ({change * 100:+.1f}%)")
        if options.only in (None, "tokens"):
            rates = bench_tokens(options.reps, options.tokens, tmp)
            print(f"token throughput per CPU second ({options.tokens:,} tokens, median):")
            for variant, (value, change) in rates.items():
                print(f"  {variant:9} {value:,.0f} tokens/s  ({change * 100:+.1f}%)")
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
