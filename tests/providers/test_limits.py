"""Bounded provider input (issue 10, item 7): one huge event, a decompression bomb.

A server, broken or hostile, decides how many bytes come before the blank line that ends
an event and how far a compressed body inflates. Through the whole path (pool, chunked
decoder, decompression, SSE decoder, chat parser) against a raw server on 127.0.0.1, each
ends in a clear `bad_response` within a bounded time and memory.
"""

from __future__ import annotations

import time
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ProviderError, StreamEvent, TextDelta
from codecoder.providers.http import HttpClient, RetryPolicy
from codecoder.providers.pool import MAX_DECODED
from codecoder.providers.registry import wire_format
from codecoder.providers.sse import MAX_EVENT, SSEDecoder
from tests.fakes.raw_server import Handler, Peer, Server

MB = 1024 * 1024
PIECE = 64 * 1024
OPENING = b'data: {"choices":[{"index":0,"delta":{"content":"'
CLOSING = (
    b'"}}]}\n\ndata: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"


def send_chunk(peer: Peer, data: bytes) -> None:
    peer.send(b"%x\r\n%s\r\n" % (len(data), data))


def one_event(size: int, *, end: bool) -> Handler:
    """A chat stream whose first event carries `size` bytes of text; `end`: the event
    (and the stream) then ends properly, else the body ends with no line end at all."""

    def handle(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(HEAD + b"\r\n")
        send_chunk(peer, OPENING)
        filler = b"x" * PIECE
        for start in range(0, size, PIECE):
            send_chunk(peer, filler[: min(PIECE, size - start)])
        if end:
            send_chunk(peer, CLOSING)
        peer.send(b"0\r\n\r\n")

    return handle


def compressed(coding: str, blocks: Iterator[bytes]) -> Handler:
    """A chat stream whose body is `blocks` compressed with `coding`."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    body = b"".join(packer.compress(block) for block in blocks) + packer.flush()

    def handle(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(HEAD + f"Content-Encoding: {coding}\r\n\r\n".encode())
        for start in range(0, len(body), PIECE):
            send_chunk(peer, body[start : start + PIECE])
        peer.send(b"0\r\n\r\n")

    return handle


def stream(handler: Handler) -> list[StreamEvent]:
    with Server(handler) as server:
        http = HttpClient(server.url, retry=RetryPolicy(max_attempts=1))
        try:
            return list(
                http.stream(
                    "/v1/chat/completions",
                    b"{}",
                    headers={},
                    cancel=CancelToken(),
                    new_parser=wire_format("chat").new_parser,
                    label="fake",
                )
            )
        finally:
            http.close()


# --- one event without an end ---------------------------------------------------------


def test_a_32_mb_event_without_a_line_end_is_refused_in_linear_time_and_bounded_memory() -> None:
    tracemalloc.start()
    started = time.process_time()
    try:
        with pytest.raises(ProviderError) as caught:
            stream(one_event(32 * MB, end=False))
        cpu = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.kind == "bad_response"
    assert not caught.value.retryable
    assert caught.value.message == (
        "fake: an event of the stream is longer than 16,777,216 bytes with no end"
    )
    assert cpu < 5.0  # measured: ~0.1 s; the quadratic decoder took 24 s
    assert peak < MAX_EVENT + 8 * MB  # the held event and a few reads, never two copies


def test_a_17_mb_event_is_refused_even_when_it_ends() -> None:
    with pytest.raises(ProviderError) as caught:
        stream(one_event(17 * MB, end=True))
    assert caught.value.kind == "bad_response" and "longer than 16,777,216" in str(caught.value)


def test_a_15_mb_event_comes_through_whole() -> None:
    events = stream(one_event(15 * MB, end=True))
    text = "".join(event.text for event in events if isinstance(event, TextDelta))
    assert text == "x" * (15 * MB)


def _feed_time(size: int) -> float:
    """CPU seconds to decode one newline-less event of `size` bytes fed in 64 KiB reads
    (the best of three, so a busy machine does not decide)."""
    piece = b"x" * PIECE
    best = float("inf")
    for _ in range(3):
        decoder = SSEDecoder(max_event=size + PIECE)
        started = time.process_time()
        decoder.feed(b"data: ")
        for _ in range(size // PIECE):
            decoder.feed(piece)
        assert decoder.feed(b"\n\n") == [("", b"x" * size)]
        best = min(best, time.process_time() - started)
    return best


def test_decoding_time_grows_linearly_with_the_event() -> None:
    small, large = _feed_time(2 * MB), _feed_time(16 * MB)
    # 8 times the bytes: linear is ~8 times the time, quadratic ~64 times
    assert large < 20 * small + 0.1, (small, large)


def test_an_unfinished_event_past_the_cap_raises_and_frees_what_it_held() -> None:
    from codecoder.providers.sse import EventTooLarge

    decoder = SSEDecoder(max_event=10)
    assert decoder.feed(b"data: 1234") == []
    with pytest.raises(EventTooLarge, match="longer than 10 bytes"):
        decoder.feed(b"5")
    decoder = SSEDecoder(max_event=10)
    with pytest.raises(EventTooLarge):  # whole in one read, ended, still too long
        decoder.feed(b"data: 12345678\n\n")
    decoder = SSEDecoder(max_event=10)
    assert decoder.feed(b"data: 1234\n\ndata: 5") == [("", b"1234")]


# --- decompression bombs ---------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_bomb_of_one_endless_event_stops_at_the_event_cap(coding: str) -> None:
    zeros = bytes(MB)
    handler = compressed(coding, iter([b"data: ", *[zeros] * 64]))  # 64 MB from ~64 KB
    tracemalloc.start()
    try:
        with pytest.raises(ProviderError) as caught:
            stream(handler)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.kind == "bad_response" and "longer than 16,777,216" in str(caught.value)
    assert peak < MAX_EVENT + 8 * MB


def test_a_bomb_of_many_events_stops_at_the_decoded_cap() -> None:
    comment = b":" + b"x" * (MB - 3) + b"\n\n"  # a keep-alive comment, 1 MiB long
    blocks = [comment] * (MAX_DECODED // MB + 1)
    with pytest.raises(ProviderError) as caught:
        stream(compressed("gzip", iter(blocks)))
    assert caught.value.kind == "bad_response" and not caught.value.retryable
    assert caught.value.message == (
        "fake: the compressed body inflates past 128 MiB (a decompression bomb?)"
    )


# --- the one plain GET ----------------------------------------------------------------


def test_a_get_stops_reading_past_16_mib() -> None:
    def endless(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        filler = b" " * PIECE
        for _ in range(64 * MB // PIECE):  # stops when the client goes away
            peer.send(filler)

    with Server(endless) as server:
        http = HttpClient(server.url)
        tracemalloc.start()
        try:
            with pytest.raises(ProviderError) as caught:
                http.get("/v1/models", headers={})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            http.close()
    assert caught.value.kind == "bad_response"
    assert caught.value.message.endswith("/v1/models is larger than 16 MiB")
    assert peak < 2 * MAX_EVENT + 8 * MB
