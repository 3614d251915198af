"""HTTP/1.1 framing (RFC 9112) for the provider path: request heads out, response heads
and bodies in. Pure functions over bytes; the sockets are `providers.pool`'s.

Why our own and not h11 under httpx: importing httpx and httpcore costs 50 to 60 ms of a
200 ms launch-to-first-request budget (measured in `exec`'s own import graph), and h11
spends ~10 µs per chunk where a streaming server sends one chunk per token. What a model
API needs of HTTP/1.1 is small: a POST with a known length, and a response framed by
chunks, a length, or the end of the connection. h11 stays the reference parser in the
tests (`tests/providers/test_http1.py`), as the SDKs are for the wire formats.

The chunked decoder works on whole reads: the chunks of one read come out as one piece of
body, so the SSE decoder and the kernel see one batch per read, not one per token.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

HEAD_LIMIT = 64 * 1024
_SIZE_LINE_LIMIT = 1024
_HEX = b"0123456789abcdefABCDEF"
_TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""RFC 9110 §5.6.2 tchar: what a field name is made of."""
_BLANKS = " \t"
_VISIBLE_ASCII = "".join(map(chr, range(0x21, 0x7F)))
_VALUE_CHARS = "\t " + _VISIBLE_ASCII + "".join(map(chr, range(0x80, 0x100)))
"""Visible ASCII, space, tab and obs-text; anything else is refused."""


class ProtocolError(Exception):
    """The server's bytes break HTTP/1.1 framing."""


class InvalidRequest(ValueError):
    """A request we refuse to send: a header that cannot go on the wire as it is."""


def request_head(method: str, target: str, host: str, headers: Mapping[str, str]) -> bytes:
    """The request line and header block; `headers` should carry Content-Length."""
    for part in (target, host):
        if not part or part.strip(_VISIBLE_ASCII):  # a space or CRLF would split the request
            raise InvalidRequest(f"{part!r} must be visible ASCII (percent-encode the rest)")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for name, value in headers.items():
        if not name or name.strip(_TOKEN_CHARS):
            raise InvalidRequest(f"{name!r} is not a header name")
        if bad := value.strip(_VALUE_CHARS):  # a line break, a control character, "…"
            raise InvalidRequest(f"header {name} holds {bad[0]!r}, which HTTP cannot carry")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Head:
    """A parsed response head. Header names are lower-cased; repeated fields are joined
    with ", " (RFC 9110 §5.3)."""

    __slots__ = ("headers", "reason", "status", "version")

    def __init__(self, version: str, status: int, reason: str, headers: dict[str, str]) -> None:
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version == "1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


def find_head_end(buffer: bytes | bytearray) -> int:
    """The index just past the blank line ending a head, or -1."""
    crlf = buffer.find(b"\r\n\r\n")
    lf = buffer.find(b"\n\n")  # bare LF line ends: tolerated, as h11 does
    ends = [at + size for at, size in ((crlf, 4), (lf, 2)) if at >= 0]
    return min(ends, default=-1)


def parse_head(raw: bytes) -> Head:
    lines = raw.decode("latin-1").split("\n")
    status_line = lines[0].rstrip("\r")
    version, _, rest = status_line.partition(" ")
    code, _, reason = rest.partition(" ")
    if version not in ("HTTP/1.1", "HTTP/1.0") or not _is_number(code, 3, 3):
        raise ProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    key = ""
    for raw_line in lines[1:]:
        line = raw_line.rstrip("\r")
        if not line:
            continue
        if line[0] in " \t":  # obs-fold: a continuation, to be read as one space (RFC 9112)
            if not key:
                raise ProtocolError(f"a continuation line with no field: {line[:80]!r}")
            headers[key] = (headers[key] + " " + line.strip(_BLANKS)).strip(_BLANKS)
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ProtocolError(f"malformed header line: {line[:80]!r}")
        key = name.lower()
        value = value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return Head(version[5:], int(code), reason, headers)


class Body(ABC):
    """A body decoder: `feed` the bytes read (after the head), get body bytes; `done` once
    the message has ended; `extra` says bytes came after its end; `reusable`, whether the
    connection can carry another request once the body is done."""

    def __init__(self, *, done: bool = False, reusable: bool = True) -> None:
        self.done = done
        self.extra = False
        self.reusable = reusable

    @abstractmethod
    def feed(self, data: bytes) -> bytes: ...

    def end_of_stream(self) -> None:
        """The server closed the connection; raises if the body was not complete."""
        if not self.done:
            raise ProtocolError("the server closed the connection before the body ended")


class NoBody(Body):
    def __init__(self) -> None:
        super().__init__(done=True)

    def feed(self, data: bytes) -> bytes:
        self.extra = self.extra or bool(data)
        return b""


class LengthBody(Body):
    def __init__(self, length: int) -> None:
        super().__init__(done=length == 0)
        self._remaining = length

    def feed(self, data: bytes) -> bytes:
        if len(data) > self._remaining:
            self.extra = True
            data = data[: self._remaining]
        self._remaining -= len(data)
        self.done = self._remaining == 0
        return data


class CloseBody(Body):
    """Delimited by the end of the connection, which then cannot be reused."""

    def __init__(self) -> None:
        super().__init__(reusable=False)

    def feed(self, data: bytes) -> bytes:
        return data

    def end_of_stream(self) -> None:
        self.done = True


class ChunkedBody(Body):
    """Chunked transfer coding. One `feed` returns the data of every chunk it completed or
    began, joined; chunk extensions are ignored and trailers dropped."""

    def __init__(self) -> None:
        super().__init__()
        self._pending = b""
        self._remaining = 0
        self._need_crlf = False
        self._trailers = False

    def feed(self, data: bytes) -> bytes:
        if self.done:
            self.extra = self.extra or bool(data)
            return b""
        buffer = self._pending + data if self._pending else data
        self._pending = b""
        if self._trailers:
            self._trailer_section(buffer)
            return b""
        pieces: list[bytes] = []
        pos = self._resume(buffer, pieces)
        if pos is None:
            return b"".join(pieces)
        size = len(buffer)
        find = buffer.find
        append = pieces.append
        while pos < size:  # the hot loop: one iteration per chunk, kept lean on purpose
            end = find(b"\r\n", pos)
            if end < 0:
                if size - pos > _SIZE_LINE_LIMIT:
                    raise ProtocolError("a chunk-size line is too long")
                self._pending = buffer[pos:]
                break
            if end - pos > _SIZE_LINE_LIMIT:
                raise ProtocolError("a chunk-size line is too long")
            length = _chunk_size(buffer[pos:end])
            if length == 0:
                self._trailers = True
                self._trailer_section(buffer[end + 2 :])
                break
            start = end + 2
            stop = start + length
            if stop + 2 > size:  # the chunk goes on in the next read
                append(buffer[start:stop])
                self._remaining = max(stop - size, 0)
                self._need_crlf = True
                self._pending = buffer[stop:]
                break
            if buffer[stop : stop + 2] != b"\r\n":
                raise ProtocolError("a chunk is not followed by CRLF")
            append(buffer[start:stop])
            pos = stop + 2
        return b"".join(pieces)

    def _resume(self, buffer: bytes, pieces: list[bytes]) -> int | None:
        """Finish the chunk the previous read left open: the position after it, or None
        when `buffer` ended first."""
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
                raise ProtocolError("a chunk is not followed by CRLF")
            pos += 2
            self._need_crlf = False
        return pos

    def _trailer_section(self, buffer: bytes) -> None:
        """After the last chunk: trailer fields up to a blank line."""
        if buffer.startswith(b"\r\n"):
            end = 2
        else:
            found = buffer.find(b"\r\n\r\n")
            end = found + 4 if found >= 0 else -1
        if end < 0:
            if len(buffer) > HEAD_LIMIT:
                raise ProtocolError("the trailer section is too large")
            self._pending = buffer
            return
        self.done = True
        self.extra = end < len(buffer)


def _chunk_size(line: bytes) -> int:
    if len(line) <= 16 and line.isalnum() and not line.translate(None, _HEX):  # bare hex
        return int(line, 16)
    digits = line.split(b";", 1)[0].strip(b" \t")  # chunk extensions, padding
    if digits:
        digits = digits.lstrip(b"0") or b"0"  # leading zeros do not count against the cap
    if not digits or digits.translate(None, _HEX) or len(digits) > 16:
        raise ProtocolError(f"bad chunk size {line[:40]!r}")
    return int(digits, 16)


def body_for(head: Head, method: str) -> Body:
    """How the body of this response is delimited (RFC 9112 §6.3)."""
    status = head.status
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return NoBody()
    coding = head.headers.get("transfer-encoding")
    if coding is not None:
        last = coding.rsplit(",", 1)[-1].strip().lower()
        body: Body = ChunkedBody() if last == "chunked" else CloseBody()
        if "content-length" in head.headers:  # both: a smuggling risk, never reuse
            body.reusable = False
        return body
    length = head.headers.get("content-length")
    if length is None:
        return CloseBody()
    values = {v.strip() for v in length.split(",")}
    value = values.pop() if len(values) == 1 else ""
    if not _is_number(value, 1, 18):
        raise ProtocolError(f"bad Content-Length {length[:40]!r}")
    return LengthBody(int(value))


def _is_number(text: str, shortest: int, longest: int) -> bool:
    """ASCII digits only ("²".isdigit() is true, and int() of 5,000 digits raises)."""
    return shortest <= len(text) <= longest and text.isascii() and text.isdigit()
