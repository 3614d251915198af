"""Stream parsers on the variants real servers send, without the network."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codecoder.kernel.events import Usage
from codecoder.kernel.ports import (
    ProviderError,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCallDone,
)
from codecoder.providers import anthropic, openai_chat, openai_responses
from codecoder.providers.wire import StreamParser


def feed(parser: StreamParser, *events: dict[str, Any] | bytes) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    for event in events:
        data = event if isinstance(event, bytes) else json.dumps(event).encode()
        out += parser.parse_event("", data)
    return out + parser.finish()


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_chat_variants_of_compatible_servers() -> None:
    events = feed(
        openai_chat.StreamParser(),
        chunk({"reasoning": "openrouter style"}),
        chunk({"content": [{"type": "text", "text": "parts "}, {"type": "image"}]}),
        chunk({"content": "and a string"}),
        # Ollama sends every call whole, each with index 0
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}
        ),
        chunk(
            {"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}
        ),
        chunk(
            {},
            "tool_calls",
            usage={"prompt_tokens": 9, "completion_tokens": 2, "prompt_cache_hit_tokens": 4},
        ),
    )
    assert events[:4] == [
        ReasoningDelta("openrouter style"),
        ReasoningDone(None),
        TextDelta("parts "),
        TextDelta("and a string"),
    ]
    assert [e.id for e in events if isinstance(e, ToolCallDone)] == ["a", "b"]
    assert events[-2:] == [
        Usage(input_tokens=9, output_tokens=2, cached_tokens=4),
        Stop("tool_use"),
    ]


def test_chat_without_done_marker_and_without_finish() -> None:
    assert feed(openai_chat.StreamParser(), chunk({"content": "x"}, "stop"))[-1] == Stop("end_turn")
    with pytest.raises(ProviderError) as caught:
        feed(openai_chat.StreamParser(), chunk({"content": "x"}))
    assert caught.value.kind == "network" and caught.value.retryable


def test_chat_error_chunk_and_unreadable_chunk() -> None:
    with pytest.raises(ProviderError) as caught:
        feed(openai_chat.StreamParser(), {"error": {"message": "boom", "type": "server_error"}})
    assert caught.value.kind == "server"
    with pytest.raises(ProviderError) as caught:
        feed(openai_chat.StreamParser(), chunk({"content": 5}))
    assert caught.value.kind == "bad_response"


def test_responses_summary_parts_and_a_call_without_its_added_event() -> None:
    events = feed(
        openai_responses.StreamParser(),
        {"type": "response.reasoning_summary_part.added", "summary_index": 0},
        {"type": "response.reasoning_summary_text.delta", "delta": "one"},
        {"type": "response.reasoning_summary_part.added", "summary_index": 1},
        {"type": "response.reasoning_summary_text.delta", "delta": "two"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "type": "reasoning",
                "id": "rs_9",
                "summary": [{"text": "one"}, {"text": "two"}],
            },
        },
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'},
        },
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            },
        },
    )
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "one\n\ntwo"
    (done,) = [e for e in events if isinstance(e, ReasoningDone)]
    token = openai_responses.decode_token(done.token)
    assert token == openai_responses.ReasoningToken(id="rs_9", summary=["one", "two"])
    assert ToolCallDone(id="c1", name="f", raw_args='{"a":1}') in events
    assert events[-1] == Stop("max_tokens")


def test_responses_error_event() -> None:
    with pytest.raises(ProviderError) as caught:
        feed(
            openai_responses.StreamParser(),
            {"type": "error", "code": "rate_limit_exceeded", "message": "slow"},
        )
    assert caught.value.kind == "rate_limit" and caught.value.retryable


def test_anthropic_redacted_thinking_usage_and_bare_tool_use() -> None:
    events = feed(
        anthropic.StreamParser(),
        {
            "type": "message_start",
            "message": {
                "usage": {
                    "input_tokens": 5,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 7,
                    "output_tokens": 1,
                }
            },
        },
        {"type": "ping"},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "EmwK"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "some_future_event", "index": 3},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 30, "input_tokens": 6},
        },
        {"type": "message_stop"},
    )
    (done,) = [e for e in events if isinstance(e, ReasoningDone)]
    assert anthropic.decode_token(done.token) == anthropic.ThinkingToken(redacted="EmwK")
    assert ToolCallDone(id="t1", name="ls", raw_args="{}") in events
    assert events[-2:] == [
        Usage(input_tokens=6 + 100 + 7, output_tokens=30, cached_tokens=100),
        Stop("tool_use"),
    ]


def test_tokens_of_one_wire_are_not_read_by_the_other() -> None:
    theirs = anthropic.encode_token(anthropic.ThinkingToken(signature="s"))
    assert openai_responses.decode_token(theirs) is None
    ours = openai_responses.encode_token(openai_responses.ReasoningToken(id="rs"))
    assert anthropic.decode_token(ours) is None
    assert anthropic.decode_token("not json") is None
