"""What a person watching a batch sees on stderr: one progress line (done / running /
failed, ETA), redrawn in place on a terminal and printed once per finished task
elsewhere (a log keeps every state, not a thousand carriage returns), and at the end a
summary table.

The ETA is the time per finished task so far (wall clock, so parallelism is in it) times
the tasks left: no model of task lengths, just what was measured.
"""

from __future__ import annotations

import time
from typing import TextIO

from codecoder.batch.results import STATUSES, ResultLine
from codecoder.terminal_text import visible
from codecoder.wording import counted

BAR = 20
TABLE_ALL_ROWS = 40
"""Up to this many tasks the table lists every one; beyond, only those that did not pass."""


class Progress:
    def __init__(self, total: int, stream: TextIO, *, skipped: int = 0) -> None:
        self.total = total
        self.stream = stream
        self.skipped = skipped
        self.live = stream.isatty()
        self.done = 0
        self.running = 0
        self.failed = 0
        self.started = time.monotonic()
        self.results: list[ResultLine] = []

    def task_started(self) -> None:
        self.running += 1
        self._show(force=False)

    def task_finished(self, result: ResultLine) -> None:
        self.running -= 1
        self.done += 1
        self.failed += result.status != "passed"
        self.results.append(result)
        self._show(force=True, last=result)

    def line(self) -> str:
        filled = BAR * self.done // self.total if self.total else BAR
        bar = "█" * filled + "·" * (BAR - filled)
        parts = [f"{self.done}/{self.total} done", f"{self.running} running"]
        parts.append(f"{self.failed} failed")
        eta = self.eta()
        if eta is not None:
            parts.append(f"ETA {_duration(eta)}")
        return f"batch [{bar}] " + " · ".join(parts)

    def eta(self) -> float | None:
        if not self.done or self.done >= self.total:
            return None
        per_task = (time.monotonic() - self.started) / self.done
        return per_task * (self.total - self.done)

    def _show(self, *, force: bool, last: ResultLine | None = None) -> None:
        if self.live:
            self._write(f"\r\x1b[K{self.line()}")
        elif force and last is not None:
            self._write(f"{visible(last.id, one_line=True)}: {last.status} · {self.line()}\n")

    def close(self) -> None:
        """End the live line, so that what follows starts on a line of its own."""
        if self.live:
            self._write("\n")

    def summary(self, *, not_started: int = 0) -> str:
        """The table of the tasks run and a line of totals."""
        results = self.results
        shown = results
        if len(results) > TABLE_ALL_ROWS:
            shown = [r for r in results if r.status != "passed"]
        rows = [("id", "status", "exit", "time", "tokens", "cost", "diff")]
        rows += [_row(result) for result in shown]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                 for row in rows]  # fmt: skip
        if len(shown) < len(results):
            lines.append(f"({len(results) - len(shown)} passed tasks not listed)")
        counts = {s: sum(r.status == s for r in results) for s in STATUSES}
        total = " · ".join(f"{n} {s}" for s, n in counts.items() if n)
        tokens = sum(r.tokens.total() for r in results)
        cost = _total_cost([r.cost for r in results])
        took = _duration(time.monotonic() - self.started)
        extra = []
        if self.skipped:
            extra.append(f"{self.skipped} already done")
        if not_started:
            extra.append(f"{not_started} not started")
        line = f"{len(results)} tasks in {took}: {total or 'none run'}"
        line += f" · {tokens} tokens · cost {cost}" + "".join(f" · {e}" for e in extra)
        return "\n".join([*lines, line]) + "\n"

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError:  # a terminal that went away: the batch goes on
            pass


def _total_cost(costs: list[float | None]) -> str:
    """The costs that are known, added, and how many tasks had none (a model without a
    price, a task that failed before its first request): one such task must not hide what
    the others cost, nor may the sum pass for the whole."""
    known = [cost for cost in costs if cost is not None]
    if costs and not known:
        return "unknown"
    missing = len(costs) - len(known)
    without = f" ({counted(missing, 'task')} without a cost)" if missing else ""
    return f"${sum(known):.4f}{without}"


def _row(result: ResultLine) -> tuple[str, ...]:
    added = removed = 0
    for line in result.diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return (
        visible(result.id, one_line=True),  # the tasks file's: a newline would forge a row
        result.status,
        "-" if result.exit_code is None else str(result.exit_code),
        f"{result.duration_s:.1f}s",
        str(result.tokens.total()),
        "-" if result.cost is None else f"${result.cost:.4f}",
        f"+{added} -{removed}",
    )


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
