"""An incremental Server-Sent Events decoder over raw bytes (WHATWG event-stream format).

Why not httpx-sse's `iter_sse`: it decodes line by line through `iter_lines()`, a few
microseconds per line, and a 20,000-token answer arrives as 20,000 events. This decoder
takes whatever bytes one socket read returned and splits them in one pass; the common
event (`data: {...}` alone) costs a `startswith` and a slice. `data` stays bytes because
msgspec decodes bytes directly.

Bounded. Each byte is looked at a fixed number of times: an unfinished event is kept as a
list of the pieces that brought it and joined once, when its blank line comes, so one
event sent over many reads costs time in proportion to its size, not to its size squared.
An event may grow to `MAX_EVENT` bytes (16 MiB, far past any real one: a model's whole
output, 128k tokens, is under 1 MB even sent as a single event); past that `feed` raises
`EventTooLarge` and drops the pieces, so a stream that never sends a blank line holds at
most 16 MiB here.
Measured through the whole provider path in a fresh process (`.venv/bin/python -m
bench.bench_sse_flood --mb 32`, a 32 MB event without a line end): before, 28.2 CPU s and
81.4 MB peak RSS (4 MB: 0.57 s, 16 MB: 7.2 s); now 0.19 CPU s and 33.1 MB, interpreter
start included, ending in `bad_response` at 16 MiB (docs/benchmarks.md).
"""

from __future__ import annotations

SSEvent = tuple[str, bytes]
"""(event name, data); the name is "" when the event had no `event:` line."""

MAX_EVENT = 16 * 1024 * 1024
"""The most bytes one event may take, its field names and line ends included."""


class EventTooLarge(ValueError):
    """An event went on past the decoder's cap without the blank line that ends it."""


class SSEDecoder:
    __slots__ = ("_cr", "_limit", "_pending", "_size")

    def __init__(self, max_event: int = MAX_EVENT) -> None:
        self._limit = max_event
        self._pending: list[bytes] = []
        """The unfinished event's pieces, line ends already made `\\n`; none is empty."""
        self._size = 0
        self._cr = False
        """The last chunk ended with `\\r`, held back: maybe half of a CRLF."""

    def feed(self, chunk: bytes) -> list[SSEvent]:
        """The events completed by `chunk`; an unfinished event waits for more bytes.
        Raises EventTooLarge once the unfinished event passes the cap."""
        if self._cr:
            chunk = b"\r" + chunk
            self._cr = False
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):  # maybe half of a CRLF: decide with the next chunk
                chunk, self._cr = chunk[:-1], True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk:
            return []
        events: list[SSEvent] = []
        if self._pending:
            rest = self._finish_pending(chunk, events)
            if rest is None:
                return events
            chunk = rest
        blocks = chunk.split(b"\n\n")
        last = blocks.pop()
        if len(chunk) > self._limit and any(len(b) > self._limit for b in blocks):
            raise EventTooLarge(self._too_large())
        for block in blocks:  # the hot loop: the common event costs a test and a slice
            if block.startswith(b"data: ") and b"\n" not in block:
                events.append(("", block[6:]))
            elif block:
                _decode(block, events)
        if last:
            self._hold(last)
        return events

    def _finish_pending(self, chunk: bytes, events: list[SSEvent]) -> bytes | None:
        """Complete the held event if `chunk` ends it: what follows its blank line; else
        None, `chunk` held too. Only `chunk` is searched, never what is held."""
        pending = self._pending
        if chunk[0] == 0x0A and pending[-1].endswith(b"\n"):  # the blank line straddles
            pending[-1] = pending[-1][:-1]
            head, rest = b"", chunk[1:]
        else:
            at = chunk.find(b"\n\n")
            if at < 0:
                self._hold(chunk)
                return None
            head, rest = chunk[:at], chunk[at + 2 :]
        if self._size + len(head) > self._limit:
            self._drop()
            raise EventTooLarge(self._too_large())
        pending.append(head)
        block = b"".join(pending)
        self._pending = []
        self._size = 0
        _decode(block, events)
        return rest

    def _hold(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._size > self._limit:
            self._drop()
            raise EventTooLarge(self._too_large())
        self._pending.append(piece)

    def _drop(self) -> None:
        self._pending = []
        self._size = 0

    def _too_large(self) -> str:
        return f"an event of the stream is longer than {self._limit:,} bytes with no end"


def _decode(block: bytes, events: list[SSEvent]) -> None:
    if block.startswith(b"data: ") and b"\n" not in block:
        events.append(("", block[6:]))
    elif block:
        event = _parse_block(block)
        if event is not None:
            events.append(event)


def _parse_block(block: bytes) -> SSEvent | None:
    name = ""
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value.decode("utf-8", "replace")
    if not data:
        return None
    return name, b"\n".join(data)
