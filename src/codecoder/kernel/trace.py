"""The structured trace (`--trace FILE`): the seeds' answer to "why did this event arrive
before that one?".

One JSON line per thing the kernel saw or did: every command, event, reply to a question
(and who gave it), permission decision, provider request (its hash and size), raw stream
event, compaction swap, and note (a traceback the user was spared); sub-agents' lines
carry their own `agent` name. Every line has `seq`, one counter for the whole trace.

`seq` is the order a consumer saw: an event's number is taken, under the tracer's lock,
in the same step that puts the event on its channel, so sorting by `seq` gives exactly
the channel order, even with several threads emitting (a reader thread's raw stream
events, parallel sub-agents). A command's number is taken before it takes effect, so a
Cancel always sorts before the Done it causes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

from codecoder.kernel import codec

T = TypeVar("T")

Direction = Literal[
    "command", "event", "reply", "decision", "request", "stream", "compaction", "note"
]

_FLUSHED = frozenset({"Done", "Error", "ConfirmRequest", "AskUser"})


class Tracer:
    """Thread-safe JSONL writer shared by an agent and its sub-agents. Lines are buffered
    and flushed on commands, questions, turn ends and close, so tracing a token flood
    stays cheap. `bodies`: provider requests are written whole (`--trace-bodies`)."""

    def __init__(self, path: Path | str, *, bodies: bool = False) -> None:
        self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()
        self._seq = 0
        self.bodies = bodies

    def command(self, agent: str, turn: int, command: Any) -> None:
        """Before the command takes effect (a Cancel sorts before what it causes)."""
        self._write("command", agent, turn, command, flush=True)

    def event(self, agent: str, turn: int, event: T, put: Callable[[T], object]) -> None:
        """Number the event and put it on its channel in one step (see the module doc)."""
        self._write("event", agent, turn, event, put, flush=type(event).__name__ in _FLUSHED)

    def line(self, direction: Direction, agent: str, turn: int, data: Any) -> None:
        """A reply, decision, request, stream event, compaction or note."""
        self._write(direction, agent, turn, data, flush=direction in ("reply", "note"))

    def note(self, agent: str, turn: int, kind: str, detail: str) -> None:
        self.line("note", agent, turn, {"type": kind, "detail": detail})

    def _write(
        self,
        direction: Direction,
        agent: str,
        turn: int,
        value: Any,
        put: Callable[[Any], object] | None = None,
        *,
        flush: bool,
    ) -> None:
        with self._lock:
            self._seq += 1
            if put is not None:
                put(value)
            if self._file.closed:
                return
            record = {
                "seq": self._seq,
                "t": time.monotonic(),
                "thread": threading.current_thread().name,
                "agent": agent,
                "turn": turn,
                "dir": direction,
                "data": value,
            }
            self._file.write(codec.encode(record) + b"\n")
            if flush:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    @staticmethod
    def read(path: Path | str) -> list[dict[str, Any]]:
        """The records of a trace file (for tests and `codecoder trace`)."""
        import msgspec

        with open(path, "rb") as handle:
            return [msgspec.json.decode(line) for line in handle if line.strip()]
