"""The SSE decoder: the WHATWG event-stream rules, whatever way the bytes are split."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codecoder.providers.sse import SSEDecoder

STREAM = (
    b": a comment line\n"
    b'data: {"a": 1}\n\n'
    b'event: content_block_delta\ndata: {"b": 2}\n\n'
    b"data: first line\ndata: second line\n\n"
    b"data:no-space\n\n"
    b"id: 7\nretry: 100\n\n"
    b"event: ping\ndata: {}\r\n\r\n"
    b"data: cr only\r\r"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    ("", b'{"a": 1}'),
    ("content_block_delta", b'{"b": 2}'),
    ("", b"first line\nsecond line"),
    ("", b"no-space"),
    ("ping", b"{}"),
    ("", b"cr only"),
    ("", b"[DONE]"),
]


def test_decodes_every_field_form() -> None:
    assert SSEDecoder().feed(STREAM) == EXPECTED


def test_an_unfinished_event_waits_for_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: partial") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\ndata: next\n\n") == [("", b"partial"), ("", b"next")]


def test_crlf_split_between_two_reads_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r\n\r") == []
    assert decoder.feed(b"\ndata: y\r\n\r\n") == [("", b"x"), ("", b"y")]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events(cuts: list[int]) -> None:
    decoder = SSEDecoder()
    events = []
    previous = 0
    for cut in [*sorted(cuts), len(STREAM)]:
        events += decoder.feed(STREAM[previous:cut])
        previous = cut
    assert events == EXPECTED
