"""`codecoder acp` writes each protocol frame whole to its standard output, even when a
signal cuts a write(2) short while a slow editor keeps the pipe full (before: the rest of
the frame was lost and the editor read half a frame joined to the next)."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType

from codecoder.daemon.stdio import write_all


def test_a_write_cut_short_by_a_signal_is_finished() -> None:
    read_end, write_end = os.pipe()
    out = os.fdopen(write_end, "wb", buffering=0)
    frames = [(f'{{"n": {n}, "pad": "' + "x" * 300_000 + '"}\n').encode() for n in range(20)]
    got = bytearray()

    def slow_reader() -> None:
        while chunk := os.read(read_end, 65536):
            got.extend(chunk)
            time.sleep(0.002)  # an editor that keeps the pipe full

    def tick(_signum: int, _frame: FrameType | None) -> None:
        pass  # a handler that returns: write(2) returns what it wrote so far

    reader = threading.Thread(target=slow_reader)
    reader.start()
    previous = signal.signal(signal.SIGALRM, tick)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        for frame in frames:
            write_all(out, frame)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        out.close()
        reader.join(30)
        os.close(read_end)
    assert bytes(got) == b"".join(frames)
