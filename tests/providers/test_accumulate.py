"""The tool-call fold shared by the adapters."""

from __future__ import annotations

import pytest

from codecoder.kernel.ports import ProviderError, ToolCallDone
from codecoder.kernel.reply import MAX_REPLY_ARGS
from codecoder.providers.accumulate import ToolCallAccumulator


def test_pieces_fold_into_calls_in_start_order() -> None:
    fold = ToolCallAccumulator()
    fold.add(1, call_id="b", name="second")
    fold.add(0, call_id="a", name="first")
    for char in '{"x": 1}':
        fold.add(0, args=char)
    fold.add(1, args="{}")
    assert fold.finish() == [
        ToolCallDone(id="b", name="second", raw_args="{}"),
        ToolCallDone(id="a", name="first", raw_args='{"x": 1}'),
    ]
    assert fold.finish() == [] and fold.count == 2


def test_a_new_id_under_a_used_index_starts_a_new_call() -> None:
    fold = ToolCallAccumulator()
    fold.add(0, call_id="a", name="one", args='{"n": 1}')
    fold.add(0, call_id="b", name="two", args='{"n": 2}')
    assert fold.finish() == [
        ToolCallDone(id="a", name="one", raw_args='{"n": 1}'),
        ToolCallDone(id="b", name="two", raw_args='{"n": 2}'),
    ]


def test_missing_ids_and_arguments_get_defaults() -> None:
    fold = ToolCallAccumulator()
    fold.add("item", name="noargs")
    assert fold.finish_one("item") == ToolCallDone(id="call_0", name="noargs", raw_args="{}")
    assert fold.finish_one("item") is None


def test_authoritative_arguments_replace_the_pieces() -> None:
    fold = ToolCallAccumulator()
    fold.add(3, call_id="c", name="f", args='{"a"')
    fold.set_args(3, '{"a": 2}')
    assert fold.finish() == [ToolCallDone(id="c", name="f", raw_args='{"a": 2}')]


def test_malformed_argument_text_is_kept_raw_for_the_kernel() -> None:
    fold = ToolCallAccumulator()
    fold.add(0, call_id="x", name="f", args='{"a": ')
    assert fold.finish()[0].raw_args == '{"a": '


def test_arguments_past_the_cap_of_a_whole_reply_raise_and_are_let_go() -> None:
    """The cap counts every call of the reply: two calls of 3/4 cap each pass it, and the
    fold raises at the piece that does, holding nothing after (a call streaming without
    end costs a few MB here, not all it sent)."""
    fold = ToolCallAccumulator()
    piece = "x" * (MAX_REPLY_ARGS // 4)
    fold.add(0, call_id="a", name="write_file", args=piece * 3)
    fold.add(1, call_id="b", name="read_file", args=piece)
    with pytest.raises(ProviderError) as caught:
        fold.add(1, args="y")
    assert caught.value.kind == "reply_too_long" and not caught.value.retryable
    assert caught.value.message == (
        f"the model's reply passed {MAX_REPLY_ARGS:,} characters of tool-call arguments"
        " (read_file) and was cut there"
    )
    assert fold.finish() == []


def test_authoritative_arguments_count_once() -> None:
    """A `done` item's full text replaces the pieces in the count too: two calls of half
    the cap each, one of them given its text twice, are at the cap, not past it."""
    half = "x" * (MAX_REPLY_ARGS // 2)
    fold = ToolCallAccumulator()
    fold.add(0, call_id="a", name="f", args=half)
    fold.set_args(0, half)
    fold.add(1, call_id="b", name="g", args=half)
    with pytest.raises(ProviderError) as caught:
        fold.set_args(0, half + "!")
    assert caught.value.kind == "reply_too_long"
