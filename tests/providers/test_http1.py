"""HTTP/1.1 framing, checked against h11 as the reference parser: whatever way a server
cuts its chunks and the network cuts its reads, the body comes out whole and once."""

from __future__ import annotations

import itertools

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codecoder.providers.http1 import (
    Body,
    ChunkedBody,
    CloseBody,
    InvalidRequest,
    LengthBody,
    NoBody,
    ProtocolError,
    body_for,
    find_head_end,
    parse_head,
    request_head,
)

RESPONSE_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
VALUE_CHARS = "".join(map(chr, [*range(0x21, 0x7F), *range(0xA0, 0x100)])) + " \t"

tokens = st.text(TOKEN_CHARS, min_size=1, max_size=12)
values = st.text(VALUE_CHARS, max_size=30).map(lambda v: v.strip(" \t"))
extensions = st.sampled_from(["", ";a", ";name=value", ';q="x; y"', ";a=1;b", " ", "\t "])


@st.composite
def chunked_messages(draw: st.DrawFn) -> tuple[bytes, bytes, list[tuple[str, str]]]:
    """(bytes on the wire, the body they carry, the trailer fields)."""
    chunks = draw(st.lists(st.binary(min_size=1, max_size=200), max_size=10))
    wire: list[bytes] = []
    for chunk in chunks:
        size = format(len(chunk), "x")
        size = draw(st.sampled_from([size, size.upper(), "00" + size]))
        wire.append(f"{size}{draw(extensions)}\r\n".encode() + chunk + b"\r\n")
    trailers = draw(st.lists(st.tuples(tokens.map(lambda t: "x-" + t), values), max_size=3))
    fields = "".join(f"{name}: {value}\r\n" for name, value in trailers)
    wire.append(f"0{draw(extensions)}\r\n{fields}\r\n".encode("latin-1"))
    return b"".join(wire), b"".join(chunks), trailers


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def h11_read(pieces: list[bytes]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The body and trailers h11, as a client, reads from a chunked response."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "example")]))
    client.send(h11.EndOfMessage())
    body = b""
    for piece in [RESPONSE_HEAD, *pieces]:
        if not piece:
            continue  # h11 takes b"" as the end of the connection
        client.receive_data(piece)
        while (event := client.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return body, list(event.headers.raw_items())
    raise AssertionError("h11 did not see the end of the body")


# --- chunked bodies ----------------------------------------------------------------------


@given(chunked_messages(), st.data())
def test_any_split_of_a_chunked_body_gives_the_body_once(
    message: tuple[bytes, bytes, list[tuple[str, str]]], data: st.DataObject
) -> None:
    wire, body, trailers = message
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(wire)), max_size=20))
    pieces = split(wire, cuts)
    decoder = ChunkedBody()
    out = b""
    fed = 0
    for piece in pieces:
        out += decoder.feed(piece)
        fed += len(piece)
        assert decoder.done == (fed == len(wire))
    assert out == body
    assert decoder.done and not decoder.extra
    decoder.end_of_stream()  # complete: no complaint
    reference, reference_trailers = h11_read(pieces)
    assert reference == body
    expected = [(n.encode(), v.encode("latin-1")) for n, v in trailers]
    assert reference_trailers == expected


def test_one_read_of_many_chunks_gives_one_piece() -> None:
    tokens = [f"data: token {n}\n\n".encode() for n in range(400)]
    wire = b"".join(b"%x\r\n%s\r\n" % (len(t), t) for t in tokens) + b"0\r\n\r\n"
    decoder = ChunkedBody()
    assert decoder.feed(wire) == b"".join(tokens)
    assert decoder.done and not decoder.extra


def test_a_chunk_cut_mid_data_comes_out_as_it_arrives() -> None:
    decoder = ChunkedBody()
    assert decoder.feed(b"a\r\n01234") == b"01234"
    assert decoder.feed(b"56789\r") == b"56789"
    assert not decoder.done
    assert decoder.feed(b"\n0\r\n\r\n") == b""
    assert decoder.done


@pytest.mark.parametrize(
    "wire",
    [
        b"zz\r\n",
        b"1x\r\nab\r\n",
        b"-1\r\n",
        b"0x10\r\n",
        b"\r\n",
        b" \r\n",
        b";ext\r\n",
    ],
)
def test_a_bad_chunk_size_is_refused(wire: bytes) -> None:
    with pytest.raises(ProtocolError):
        ChunkedBody().feed(wire)


@pytest.mark.parametrize("size", [b"1" + b"0" * 16, b"1" + b"0" * 16 + b";ext"])
def test_a_chunk_size_beyond_64_bits_is_refused(size: bytes) -> None:
    """The same size is refused with or without a chunk extension."""
    with pytest.raises(ProtocolError):
        ChunkedBody().feed(size + b"\r\nabc")


@pytest.mark.parametrize("size", [b"0" * 19 + b"5", b"0" * 19 + b"5;ext"])
def test_leading_zeros_do_not_count_against_the_size_cap(size: bytes) -> None:
    body = ChunkedBody()
    assert body.feed(size + b"\r\nhello\r\n0\r\n\r\n") == b"hello"
    assert body.done


@pytest.mark.parametrize(
    "pieces",
    [
        [b"3\r\nabcXY"],
        [b"3\r\nabc", b"XY"],
        [b"3\r\nabc\r", b"X"],
        [b"3\r\nab", b"c\n\n"],
    ],
)
def test_chunk_data_not_followed_by_crlf_is_refused(pieces: list[bytes]) -> None:
    decoder = ChunkedBody()
    with pytest.raises(ProtocolError):
        for piece in pieces:
            decoder.feed(piece)


def test_an_endless_chunk_size_line_is_refused() -> None:
    decoder = ChunkedBody()
    assert decoder.feed(b"1;" + b"x" * 600) == b""
    with pytest.raises(ProtocolError, match="too long"):
        decoder.feed(b"x" * 600)


def test_an_endless_trailer_section_is_refused() -> None:
    decoder = ChunkedBody()
    decoder.feed(b"0\r\nx-a: 1\r\n")
    with pytest.raises(ProtocolError, match="too large"):
        decoder.feed(b"x-b: " + b"y" * (70 * 1024))


def test_a_connection_closed_mid_body_is_an_error() -> None:
    decoder = ChunkedBody()
    decoder.feed(b"5\r\nab")
    with pytest.raises(ProtocolError):
        decoder.end_of_stream()


@pytest.mark.parametrize(
    "pieces",
    [
        [b"1\r\na\r\n0\r\n\r\nHTTP/1.1 200 OK"],
        [b"0\r\nx-t: 1\r\n\r\nX"],
        [b"0\r\n\r\n", b"X"],
        [b"0\r\n", b"\r\nX"],
    ],
)
def test_bytes_after_the_end_are_flagged(pieces: list[bytes]) -> None:
    decoder = ChunkedBody()
    out = b"".join(decoder.feed(piece) for piece in pieces)
    assert out in (b"a", b"")
    assert decoder.done and decoder.extra


# --- request heads -----------------------------------------------------------------------


@given(
    st.sampled_from(["GET", "POST", "HEAD", "PUT", "DELETE"]),
    st.text("abcxyz0189-._~%/=&?", max_size=30).map(lambda t: "/" + t),
    st.dictionaries(tokens.map(lambda t: "X-" + t), values, max_size=6),
)
def test_a_request_head_reads_back_the_same_with_h11(
    method: str, target: str, headers: dict[str, str]
) -> None:
    raw = request_head(method, target, "api.example.com:8443", headers)
    server = h11.Connection(h11.SERVER)
    server.receive_data(raw)
    event = server.next_event()
    assert isinstance(event, h11.Request)
    assert event.method == method.encode()
    assert event.target == target.encode()
    expected = [(b"Host", b"api.example.com:8443")]
    expected += [(n.encode(), v.encode("latin-1")) for n, v in headers.items()]
    assert list(event.headers.raw_items()) == expected


def test_a_request_head_is_one_crlf_block() -> None:
    raw = request_head("POST", "/v1/messages", "h", {"Content-Length": "2"})
    assert raw == b"POST /v1/messages HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n"


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A": "v\r\nEvil: 1"},
        {"X-A": "v\nEvil: 1"},
        {"X-A": "v\rEvil: 1"},
        {"X-A": "v\0"},
        {"X-A: b": "v"},
        {"X-A\r\nEvil": "v"},
        {"X-A": "wait…"},
        {"X-Ā": "v"},
    ],
)
def test_header_injection_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(InvalidRequest):
        request_head("POST", "/", "h", headers)


# --- response heads ----------------------------------------------------------------------


def test_a_head_gives_status_reason_and_lowercased_headers() -> None:
    raw = (
        b"HTTP/1.1 429 Too Many Requests\r\n"
        b"Content-Type: application/json\r\n"
        b"Retry-After:  7 \r\n"
        b"Set-Cookie: a=1\r\n"
        b"set-cookie: b=2\r\n"
        b"X-Empty:\r\n\r\n"
    )
    head = parse_head(raw)
    assert (head.version, head.status, head.reason) == ("1.1", 429, "Too Many Requests")
    assert head.headers == {
        "content-type": "application/json",
        "retry-after": "7",
        "set-cookie": "a=1, b=2",
        "x-empty": "",
    }
    assert head.keep_alive


def test_a_status_line_without_reason_is_read() -> None:
    head = parse_head(b"HTTP/1.1 204\r\n\r\n")
    assert (head.status, head.reason) == (204, "")


def test_a_bare_lf_head_is_read() -> None:
    raw = b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nhi"
    end = find_head_end(raw)
    assert raw[end:] == b"hi"
    head = parse_head(raw[:end])
    assert head.status == 200
    assert head.headers == {"content-length": "2", "x-a": "b"}


def test_a_bare_lf_head_ends_at_its_own_blank_line() -> None:
    """A CRLF blank line further on, in the body, is not the end of the head."""
    head = b"HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
    raw = head + b"data: {}\r\n\r\n"
    assert find_head_end(raw) == len(head)


def test_the_head_end_is_found_only_once_complete() -> None:
    raw = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"
    assert find_head_end(raw) == raw.index(b"body")
    assert find_head_end(raw[: raw.index(b"body") - 1]) == -1


@pytest.mark.parametrize(
    ("raw", "keep_alive"),
    [
        (b"HTTP/1.1 200 OK\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nConnection: Upgrade, Close\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n", True),
        (b"HTTP/1.0 200 OK\r\nKeep-Alive: timeout=5\r\n\r\n", False),
    ],
)
def test_keep_alive_follows_the_version_and_connection(raw: bytes, keep_alive: bool) -> None:
    assert parse_head(raw).keep_alive is keep_alive


@pytest.mark.parametrize(
    "raw",
    [
        b"\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 2\xb20 OK\r\n\r\n",
        b"HTTP/2 200 OK\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n: no name\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nName : v\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded\r\nA: b\r\n\r\n",
    ],
    ids=[
        "empty",
        "short-code",
        "long-code",
        "letters",
        "superscript-code",
        "http2",
        "lowercase",
        "ssh",
        "no-colon",
        "no-name",
        "space-before-colon",
        "fold-first",
    ],
)
def test_a_garbage_head_is_refused(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse_head(raw)


def test_a_folded_header_line_continues_the_field_with_one_space() -> None:
    """obs-fold: RFC 9112 §5.2 has a client replace it with a space, as h11 does."""
    head = parse_head(
        b"HTTP/1.1 200 OK\r\nX-Note: first\r\n \t second \r\nLocation:\r\n /v1/next\r\n\r\n"
    )
    assert head.headers == {"x-note": "first second", "location": "/v1/next"}


# --- body framing ------------------------------------------------------------------------


def framing(head: bytes, method: str = "GET") -> Body:
    return body_for(parse_head(b"HTTP/1.1 " + head + b"\r\n\r\n"), method)


@pytest.mark.parametrize(
    ("head", "method"),
    [
        (b"200 OK\r\nContent-Length: 5", "HEAD"),
        (b"204 No Content", "POST"),
        (b"304 Not Modified\r\nContent-Length: 5", "GET"),
        (b"100 Continue", "POST"),
    ],
)
def test_answers_that_carry_no_body(head: bytes, method: str) -> None:
    body = framing(head, method)
    assert isinstance(body, NoBody)
    assert body.done and body.reusable
    assert body.feed(b"") == b"" and not body.extra
    assert body.feed(b"stray") == b"" and body.extra


def test_chunked_wins_over_content_length_but_the_connection_is_not_reused() -> None:
    body = framing(b"200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3")
    assert isinstance(body, ChunkedBody)
    assert not body.reusable


@pytest.mark.parametrize(
    ("coding", "kind"),
    [
        (b"chunked", ChunkedBody),
        (b"gzip, Chunked", ChunkedBody),
        (b"chunked, gzip", CloseBody),
        (b"gzip", CloseBody),
    ],
)
def test_the_last_transfer_coding_decides(coding: bytes, kind: type) -> None:
    assert type(framing(b"200 OK\r\nTransfer-Encoding: " + coding)) is kind


def test_content_length_frames_the_body() -> None:
    body = framing(b"200 OK\r\nContent-Length: 5")
    assert isinstance(body, LengthBody) and body.reusable and not body.done
    assert body.feed(b"abc") == b"abc" and not body.done
    with pytest.raises(ProtocolError):
        body.end_of_stream()
    assert body.feed(b"deXYZ") == b"de"
    assert body.done and body.extra


def test_repeated_equal_content_lengths_are_one() -> None:
    body = framing(b"200 OK\r\nContent-Length: 3\r\nContent-Length: 3")
    assert isinstance(body, LengthBody)
    assert body.feed(b"abc") == b"abc" and body.done and not body.extra


def test_a_zero_length_body_is_done_at_once() -> None:
    assert framing(b"200 OK\r\nContent-Length: 0").done


@pytest.mark.parametrize(
    "value",
    [b"3, 4", b"", b"-1", b"+3", b"0x10", b"3 4", b"\xb2", b"9" * 5000],
    ids=["conflicting", "empty", "negative", "plus", "hex", "two", "superscript", "huge"],
)
def test_a_bad_or_conflicting_content_length_is_refused(value: bytes) -> None:
    with pytest.raises(ProtocolError):
        framing(b"200 OK\r\nContent-Length: " + value)


def test_without_framing_the_body_runs_to_the_close() -> None:
    body = framing(b"200 OK\r\nContent-Type: text/plain")
    assert isinstance(body, CloseBody)
    assert not body.reusable
    assert body.feed(b"all of it") == b"all of it" and not body.done
    body.end_of_stream()
    assert body.done
