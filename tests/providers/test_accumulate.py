"""The tool-call fold shared by the adapters."""

from __future__ import annotations

from codecoder.kernel.ports import ToolCallDone
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
