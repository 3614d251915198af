"""What a traced round costs before the tracer does anything optional: the floor under
issue 16's "tracing costs <= 5% of the round" (docs/benchmarks.md).

    .venv/bin/python -m bench.bench_trace_floor [--blocks 20]

Tracers that each do one step more of what every line of the trace must do, measured
against no tracer with bench_replay's interleaved turns:

- calls:    the loop's calls to the tracer, which only put the event on its channel
- numbered: + the number taken under the lock, with the put (the trace's order guarantee)
- kept:     + the line kept (a struct holding the frozen event; 256 kept, then dropped)
- encoded:  + the kept lines encoded to JSON lines (`encode_lines`, 256 at a time)
- written:  + written to the trace file: every line the issue asks for, except that a
            request line says only its purpose and size, with no hash
- traced:   the real tracer (the thread's name, the flush points, the request hashes)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from bench.bench_replay import VARIANTS, Variant, bench_rounds, print_rounds

from codecoder.kernel.ports import ProviderRequest
from codecoder.kernel.trace import Direction, RequestDigest, Tracer, _encoder, _Line
from codecoder.sessions import SessionStore

Step = Literal["calls", "numbered", "kept", "encoded", "written"]
_monotonic = time.monotonic


class Partial(Tracer):
    """The tracer cut short after `step`."""

    step: Step = "calls"

    def request(
        self, agent: str, turn: int, request: ProviderRequest, digest: RequestDigest
    ) -> None:
        self.line("request", agent, turn, {"purpose": request.purpose, "messages": 1})

    def line(
        self,
        direction: Direction,
        agent: str,
        turn: int,
        value: Any,
        put: Callable[[Any], object] | None = None,
    ) -> None:
        step = self.step
        if step == "calls":
            if put is not None:
                put(value)
            return
        lock = self._lock
        lock.acquire()
        self._seq = seq = self._seq + 1
        if step != "numbered":
            pending = self._pending
            pending.append(_Line(seq, _monotonic(), "agent-loop", agent, turn, direction, value))
            if len(pending) >= 256:
                if step == "written":
                    self._write()
                else:
                    if step == "encoded":
                        _encoder.encode_lines(pending)
                    pending.clear()
        if put is not None:
            put(value)
        lock.release()


def _partial(step: Step) -> Variant:
    def variant(tmp: Path, store: SessionStore) -> dict[str, Any]:
        tracer = Partial(tmp / f"trace-{time.monotonic_ns()}.jsonl")
        tracer.step = step
        return {**VARIANTS["plain"](tmp, store), "tracer": tracer}

    return variant


STEPS: tuple[Step, ...] = ("calls", "numbered", "kept", "encoded", "written")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--turns", type=int, default=49)
    parser.add_argument("--per-turn", type=int, default=10)
    options = parser.parse_args()
    variants = {"plain": VARIANTS["plain"]}
    variants.update({step: _partial(step) for step in STEPS})
    variants["traced"] = VARIANTS["traced"]
    with tempfile.TemporaryDirectory() as name:
        print_rounds(
            bench_rounds(options.blocks, options.turns, options.per_turn, Path(name), variants)
        )


if __name__ == "__main__":
    main()
