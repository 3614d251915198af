"""The results file of `codecoder batch`: one `ResultLine` per finished task, appended as
tasks finish (docs/batch.md lists the fields).

Valid at every instant: each line is written whole by one `write()` on a file opened for
appending, so whatever stops the batch (Ctrl+C, SIGKILL, a full disk) leaves complete
lines and at most one cut-off last line, which `--resume` drops before it appends (its
task runs again). An id may appear twice after a resume (a `cancelled` line, then the
line of the run that finished it): the last line of an id is its result.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import msgspec

Status = Literal["passed", "failed", "error", "timeout", "cancelled"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "error", "timeout", "cancelled")
FINAL: frozenset[str] = frozenset({"passed", "failed", "error", "timeout"})
"""Statuses that `--resume` keeps; a `cancelled` task runs again."""


class ResultsError(Exception):
    """The results file cannot be used: one line naming it and the problem."""


class Tokens(msgspec.Struct):
    input: int = 0
    output: int = 0
    cached: int = 0
    reasoning: int = 0

    def total(self) -> int:
        return self.input + self.output


class Gate(msgspec.Struct, frozen=True):
    """One run of a plan's gate (docs/plans.md): every attempt's gates, in order."""

    milestone: str
    attempt: int
    index: int
    command: str
    exit_code: int | None
    duration_ms: int
    output_tail: str


class ResultLine(msgspec.Struct, frozen=True, omit_defaults=True):
    """One task's result. `gates` only for a plan task, `session_export` when a session
    was made, `error` when the task did not pass (what went wrong, one line)."""

    id: str
    status: Status
    exit_code: int | None
    duration_s: float
    tokens: Tokens
    cost: float | None
    diff: str
    gates: list[Gate] | None = None
    session_export: str | None = None
    error: str | None = None


_decoder = msgspec.json.Decoder(ResultLine)


def encode(result: ResultLine) -> bytes:
    return msgspec.json.encode(result) + b"\n"


def exports_folder(results: Path) -> Path:
    """Where the session exports of a results file go: `out.jsonl` → `out.sessions/`."""
    return results.with_name(f"{results.stem}.sessions")


def export_name(task_id: str) -> str:
    """A file name for any id (`/`, `..` and the like percent-encoded)."""
    name = quote(task_id, safe="-_.,=+@")
    return f"{'%2E' if name.startswith('.') else ''}{name.removeprefix('.')}.jsonl"


def read_done(path: Path) -> dict[str, ResultLine]:
    """The last result of each id in an existing results file, after dropping a last line
    that was cut off; {} when there is no file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ResultsError(f"{path}: {exc.strerror or exc}") from None
    whole = data.rfind(b"\n") + 1
    if whole < len(data):
        with path.open("r+b") as file:
            file.truncate(whole)
    done: dict[str, ResultLine] = {}
    for number, line in enumerate(data[:whole].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            result = _decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise ResultsError(f"{path}:{number}: not a result line ({exc})") from None
        done[result.id] = result
    return done


class ResultsWriter:
    """Appends result lines, each with one write (see the module's docstring), and
    writes session exports beside them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def write(self, result: ResultLine) -> None:
        data = encode(result)
        written = os.write(self._fd, data)
        while written < len(data):  # a regular file takes it all, barring a full disk
            written += os.write(self._fd, data[written:])

    def export(self, task_id: str, data: bytes) -> str:
        """Write a session export; its path relative to the results file's folder."""
        folder = exports_folder(self.path)
        folder.mkdir(exist_ok=True)
        file = folder / export_name(task_id)
        temporary = file.with_name(f".{file.name}.tmp")
        temporary.write_bytes(data)
        temporary.replace(file)
        return str(file.relative_to(self.path.parent))

    def close(self) -> None:
        os.close(self._fd)
