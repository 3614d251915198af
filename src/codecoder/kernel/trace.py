"""The structured trace (`--trace FILE`): the seeds' answer to "why did this event arrive
before that one?".

Every command and event becomes one JSON line with a monotonic timestamp, the turn and
the name of the thread that produced it. Notes carry what the user is spared (tracebacks).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import IO, Any

from codecoder.kernel import codec


class Tracer:
    """Thread-safe JSONL writer. Lines are buffered and flushed at turn ends, on
    commands and on close, so tracing a token flood stays cheap."""

    def __init__(self, path: Path | str) -> None:
        self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()

    def command(self, turn: int, command: Any) -> None:
        self._write("command", turn, command, flush=True)

    def event(self, turn: int, event: Any) -> None:
        flush = type(event).__name__ in ("Done", "Error", "ConfirmRequest", "AskUser")
        self._write("event", turn, event, flush=flush)

    def note(self, turn: int, kind: str, detail: str) -> None:
        self._write("note", turn, {"type": kind, "detail": detail}, flush=True)

    def _write(self, direction: str, turn: int, value: Any, *, flush: bool) -> None:
        record = {
            "t": time.monotonic(),
            "thread": threading.current_thread().name,
            "turn": turn,
            "dir": direction,
            "data": value,
        }
        line = codec.encode(record) + b"\n"
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line)
            if flush:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    @staticmethod
    def read(path: Path | str) -> list[dict[str, Any]]:
        """The records of a trace file (for tests and `codecoder` tooling)."""
        import msgspec

        with open(path, "rb") as handle:
            return [msgspec.json.decode(line) for line in handle if line.strip()]
