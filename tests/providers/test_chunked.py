"""ChunkMerger: h11 must read the same body, merged or not, however the bytes arrive."""

from __future__ import annotations

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from codecoder.providers._chunked import ChunkMerger

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _read(raw: bytes, cuts: list[int], *, merge: bool) -> tuple[list[bytes], bool]:
    """(body pieces h11 produced, whether the message ended) for `raw` read in pieces."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    merger = ChunkMerger()
    pieces: list[bytes] = []
    previous = 0
    for cut in [*sorted(cuts), len(raw)]:
        data, previous = raw[previous:cut], cut
        if merge:
            data = merger.feed(data)
        if not data:
            continue  # the transport reads again rather than report end of stream
        conn.receive_data(data)
        while (event := conn.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Data):
                pieces.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return pieces, True
    return pieces, False


def _chunked(chunks: list[bytes], extension: bytes = b"") -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(c), extension, c) for c in chunks)
    return HEAD + body + b"0\r\nx-trailer: 1\r\n\r\n"


chunk_lists = st.lists(st.binary(min_size=1, max_size=40), max_size=15)
cut_lists = st.lists(st.integers(min_value=1, max_value=2000), max_size=10)


@settings(max_examples=300)
@given(chunk_lists, cut_lists, st.sampled_from([b"", b";name=value"]))
def test_same_body_with_and_without_merging(
    chunks: list[bytes], cuts: list[int], extension: bytes
) -> None:
    raw = _chunked(chunks, extension)
    cuts = [cut for cut in cuts if cut < len(raw)]
    plain, plain_ended = _read(raw, cuts, merge=False)
    merged, merged_ended = _read(raw, cuts, merge=True)
    assert plain_ended and merged_ended
    assert b"".join(merged) == b"".join(plain) == b"".join(chunks)


def test_all_chunks_of_one_read_become_one() -> None:
    chunks = [b"data: %d\n\n" % n for n in range(500)]
    merged, ended = _read(_chunked(chunks), [], merge=True)
    assert ended
    assert merged == [b"".join(chunks)]


def test_a_content_length_body_passes_untouched() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    assert ChunkMerger().feed(raw) == raw


def test_an_interim_answer_is_skipped_before_the_real_head() -> None:
    raw = b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n" + _chunked([b"a", b"b"])
    merged, ended = _read(raw, [len(raw) // 2], merge=True)
    assert ended and b"".join(merged) == b"ab"


def test_a_malformed_body_is_passed_through_for_h11_to_reject() -> None:
    merger = ChunkMerger()
    raw = HEAD + b"3\r\nabc\r\nzz\r\nrest"
    assert merger.feed(raw) == HEAD + b"3\r\nabc\r\n" + b"zz\r\nrest"
    assert merger.feed(b"more") == b"more"


def test_held_back_bytes_come_out_at_end_of_stream() -> None:
    merger = ChunkMerger()
    assert merger.feed(HEAD + b"1f") == HEAD
    assert merger.flush() == b"1f"


def test_reset_starts_the_next_response_on_a_kept_alive_connection() -> None:
    merger = ChunkMerger()
    first = _chunked([b"x"])
    assert merger.feed(first).endswith(b"0\r\nx-trailer: 1\r\n\r\n")
    merger.reset()
    assert merger.feed(_chunked([b"y", b"z"])) == HEAD + b"2\r\nyz\r\n0\r\nx-trailer: 1\r\n\r\n"
