"""The scripted provider reads codecoder-script/1 and plays it like a real stream."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Usage
from codecoder.kernel.ports import (
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    TextDelta,
    ToolCallDone,
)
from codecoder.providers.scripted import ScriptedProvider, ScriptError, load_script, parse_script

TURN = ProviderRequest(system="", messages=())
COMPACT = ProviderRequest(system="", messages=(), purpose="compaction")


def test_full_format_plays_every_part_kind() -> None:
    script = {
        "format": "codecoder-script/1",
        "replies": [
            {
                "token_delay": 0,
                "parts": [
                    {"type": "reasoning", "text": "plan it", "token": "opaque"},
                    {"type": "text", "text": "Reading  the file.\n"},
                    {"type": "tool_call", "name": "read_file", "args": {"path": "a.py"}},
                    {"type": "tool_call", "name": "grep", "raw_args": "{broken"},
                    {"type": "usage", "input_tokens": 10, "output_tokens": 4},
                ],
            }
        ],
    }
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    events = list(provider.stream(TURN, CancelToken()))
    assert events[:3] == [ReasoningDelta("plan "), ReasoningDelta("it"), ReasoningDone("opaque")]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Reading  the file.\n"
    assert sum(isinstance(e, TextDelta) for e in events) == 3  # token by token
    calls = [e for e in events if isinstance(e, ToolCallDone)]
    assert calls == [
        ToolCallDone("call_0_2", "read_file", '{"path":"a.py"}'),
        ToolCallDone("call_0_3", "grep", "{broken"),
    ]
    assert Usage(input_tokens=10, output_tokens=4) in events
    assert events[-1] == Stop("tool_use")


def test_shorthand_list_of_lists_and_string_parts() -> None:
    provider = ScriptedProvider(parse_script('[["hello"], ["again"]]'))
    first = list(provider.stream(TURN, CancelToken()))
    second = list(provider.stream(TURN, CancelToken()))
    assert first == [TextDelta("hello"), Stop("end_turn")]
    assert second == [TextDelta("again"), Stop("end_turn")]
    with pytest.raises(ProviderError) as info:
        list(provider.stream(TURN, CancelToken()))
    assert info.value.kind == "script_exhausted"


def test_compaction_requests_take_their_own_replies() -> None:
    script = {"format": "codecoder-script/1", "replies": [["turn"]], "compaction": [["summary"]]}
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    assert next(iter(provider.stream(COMPACT, CancelToken()))) == TextDelta("summary")
    assert next(iter(provider.stream(TURN, CancelToken()))) == TextDelta("turn")


def test_subagents_claim_replies_by_task_regex() -> None:
    script = {
        "format": "codecoder-script/1",
        "replies": [],
        "subagents": [
            {"match": "tests?", "replies": [["found 3 tests"]]},
            {"match": "tests?", "replies": [["found 4 tests"]]},
        ],
    }
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    first = provider.for_subagent("count the tests")
    second = provider.for_subagent("count the tests again")
    assert first is not None and second is not None
    assert next(iter(first.stream(TURN, CancelToken()))) == TextDelta("found ")
    assert list(second.stream(TURN, CancelToken()))[2] == TextDelta("tests")
    assert provider.for_subagent("count tests") is None
    assert provider.for_subagent("unrelated") is None


def test_error_part_raises_a_provider_error_after_what_came_before() -> None:
    provider = ScriptedProvider(parse_script('[["hi", {"type": "error", "kind": "rate_limit"}]]'))
    seen = []
    with pytest.raises(ProviderError) as info:
        seen.extend(provider.stream(TURN, CancelToken()))
    assert seen == [TextDelta("hi")]
    assert info.value.kind == "rate_limit"


def test_token_delay_and_sleep_are_cut_short_by_cancel() -> None:
    provider = ScriptedProvider(
        parse_script('[{"token_delay": 5, "parts": ["a b c"]}, [{"type": "sleep", "seconds": 60}]]')
    )
    for _ in range(2):
        token = CancelToken()
        stream = provider.stream(TURN, token)
        token.cancel()
        started = time.monotonic()
        assert list(stream) == []
        assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "not JSON"),
        ('{"format": "other/2", "replies": []}', "format"),
        ('[[{"type": "dance"}]]', "dance"),
        ('[[{"type": "tool_call", "name": "x"}]]', "exactly one of args and raw_args"),
        ('[[{"type": "error", "kind": "weird"}]]', "kind"),
        ('[[{"type": "sleep", "seconds": "long"}]]', "seconds"),
        (
            '{"format": "codecoder-script/1", "replies": [],'
            ' "subagents": [{"match": "(", "replies": []}]}',
            "match",
        ),
    ],
)
def test_bad_scripts_are_rejected_clearly(text: str, fragment: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(text)
    assert fragment in str(info.value)


def test_load_script_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[[{")
    with pytest.raises(ScriptError, match=str(bad)):
        load_script(bad)


@pytest.mark.parametrize("seconds", ["1e308", "1e999", "-1", "86400.5", '"nan"'])
def test_a_pause_that_cannot_be_slept_is_refused(seconds: str) -> None:
    with pytest.raises(ScriptError):
        parse_script(f'[[{{"type": "sleep", "seconds": {seconds}}}]]')
    with pytest.raises(ScriptError):
        parse_script(
            f'{{"format": "codecoder-script/1", "replies": '
            f'[{{"token_delay": {seconds}, "parts": ["x"]}}]}}'
        )
    assert parse_script('[[{"type": "sleep", "seconds": 86400}]]').replies[0].parts
