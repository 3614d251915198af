"""Ctrl+C, SIGTERM and SIGHUP during a batch, acted on by a thread of their own.

The batch's main thread spends its time blocked: on the pool's event queue, or inside
Ray's `ray.wait()` in C, where a Python-level signal handler does not run until the call
returns (minutes, for a long task). So the handler does nothing, and the signal is taken
from `signal.set_wakeup_fd`'s pipe, which the interpreter writes to from the C-level
handler the instant the signal arrives; a watcher thread reads it and calls `on_signal`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_STOP = b"\0"  # no signal has number 0


class SignalWatcher:
    def __init__(self, on_signal: Callable[[int], None]) -> None:
        self.first: int | None = None
        """The first signal received, which decides the batch's exit code."""
        self._on_signal = on_signal
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._thread = threading.Thread(target=self._run, name="batch-signals")
        self._thread.start()
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = {signum: signal.signal(signum, _ignore) for signum in WATCHED}

    def _run(self) -> None:
        while True:
            data = os.read(self._read, 64)
            for signum in data:
                if signum == 0:
                    return
                if signum in WATCHED:
                    if self.first is None:
                        self.first = signum
                    self._on_signal(signum)

    def close(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.write(self._write, _STOP)
        self._thread.join()
        os.close(self._read)
        os.close(self._write)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """A Python-level handler, so that the signal does not end the process: the work is
    done by the watcher thread."""
