"""Re-framing of chunked HTTP/1.1 bodies: every chunk that arrives in one socket read is
merged into one chunk before h11 parses it.

Why: a streaming model server sends each SSE event as its own HTTP chunk, and h11 spends
~10 µs per chunk (measured: 0.2 s for a 20,000-token answer, half the budget of the whole
run). Merged, h11 sees one chunk per read (up to 64 KiB) and the SSE decoder gets the
events of a read together, so tokens coalesce into few events downstream.

The rewrite keeps the message the same: the same body bytes, still chunked, the final
`0` chunk and any trailers passed through as they came. Anything unexpected (a bad chunk
size, a missing CRLF) stops the rewriting for the rest of that response and passes bytes
through untouched, so h11 reports the fault as it would have.
"""

from __future__ import annotations

_HEAD_END = b"\r\n\r\n"
_HEAD_LIMIT = 64 * 1024
_HEX = b"0123456789abcdefABCDEF"


class ChunkMerger:
    """Fed every byte a connection reads; `reset` when a new request is written."""

    __slots__ = ("_need_crlf", "_pending", "_remaining", "_state")

    def __init__(self) -> None:
        self._state = "head"
        self._pending = b""
        self._remaining = 0
        self._need_crlf = False

    def reset(self) -> None:
        """A new request goes out: the next bytes read begin its response."""
        self.__init__()

    def feed(self, data: bytes) -> bytes:
        """The bytes to hand to the HTTP parser for `data`; may be b"" while a head or a
        chunk-size line is incomplete (the caller then reads again)."""
        if self._state == "pass":
            return data
        if self._state == "head":
            return self._head(data)
        return self._body(data)

    def flush(self) -> bytes:
        """At end of stream: whatever is held back, unchanged."""
        pending, self._pending = self._pending, b""
        self._state = "pass"
        return pending

    def _head(self, data: bytes) -> bytes:
        buffer = self._pending + data
        end = buffer.find(_HEAD_END)
        if end < 0:
            if len(buffer) > _HEAD_LIMIT:
                return self._give_up(buffer)
            self._pending = buffer
            return b""
        self._pending = b""
        head, rest = buffer[: end + 4], buffer[end + 4 :]
        status = head[9:12]
        if status.startswith(b"1") and status != b"101":
            return head + self._head(rest) if rest else head  # an interim answer: next head
        if _is_chunked(head):
            self._state = "body"
            return head + self._body(rest) if rest else head
        self._state = "pass"
        return head + rest

    def _body(self, data: bytes) -> bytes:
        buffer = self._pending + data if self._pending else data
        self._pending = b""
        pieces: list[bytes] = []
        pos = self._resume(buffer, pieces)
        if pos is None:
            return _frame(pieces)
        if pos < 0:  # no CRLF where the open chunk ended
            return _frame(pieces) + self._give_up(buffer[-pos - 1 :])
        size = len(buffer)
        find = buffer.find
        append = pieces.append
        while pos < size:  # the hot loop: one iteration per chunk, kept lean on purpose
            end = find(b"\r\n", pos)
            if end < 0:
                self._pending = buffer[pos:]
                break
            length = _chunk_size(buffer[pos:end])
            if length is None:
                return _frame(pieces) + self._give_up(buffer[pos:])
            if length == 0:  # the last chunk: it and the trailers pass as they are
                self._state = "pass"
                return _frame(pieces) + buffer[pos:]
            start = end + 2
            stop = start + length
            if stop + 2 > size:  # the chunk goes on in the next read
                append(buffer[start:stop])
                self._remaining = max(stop - size, 0)
                self._need_crlf = True
                self._pending = buffer[stop:]
                break
            if buffer[stop : stop + 2] != b"\r\n":
                return _frame(pieces) + self._give_up(buffer[pos:])
            append(buffer[start:stop])
            pos = stop + 2
        return _frame(pieces)

    def _resume(self, buffer: bytes, pieces: list[bytes]) -> int | None:
        """Finish the chunk the previous read left open. The position after it; None
        when `buffer` ended first; `-1 - position` when its CRLF is missing."""
        pos = 0
        if self._remaining:
            pos = min(self._remaining, len(buffer))
            pieces.append(buffer[:pos])
            self._remaining -= pos
            if self._remaining:
                return None
        if self._need_crlf:
            if len(buffer) - pos < 2:
                self._pending = buffer[pos:]
                return None
            if buffer[pos : pos + 2] != b"\r\n":
                return -1 - pos
            pos += 2
            self._need_crlf = False
        return pos

    def _give_up(self, rest: bytes) -> bytes:
        self._state = "pass"
        self._pending = b""
        return rest


def _frame(pieces: list[bytes]) -> bytes:
    """One chunk of all `pieces`; never an empty one (that would end the body)."""
    data = b"".join(pieces)
    return b"%x\r\n%b\r\n" % (len(data), data) if data else b""


def _chunk_size(line: bytes) -> int | None:
    if line.isalnum() and not line.translate(None, _HEX):  # the common case: bare hex
        return int(line, 16)
    digits = line.split(b";", 1)[0].strip()  # chunk extensions, padding
    if not digits or digits.translate(None, _HEX):
        return None
    return int(digits, 16)


def _is_chunked(head: bytes) -> bool:
    for line in head.lower().split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip() == b"transfer-encoding":
            return value.strip().endswith(b"chunked")
    return False
