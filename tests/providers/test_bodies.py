"""Kernel history → each wire's request body, checked against the SDKs' request types.

The same conversation goes through every adapter (STYLE.md: same cases through every
adapter): a user task, an assistant reply with reasoning, text and two tool calls, their
results (one failed), an interrupted reply, a follow-up.
"""

from __future__ import annotations

from typing import Any

import pytest

from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall, tool_result, user_message
from codecoder.kernel.ports import ProviderRequest, ToolSpec
from codecoder.providers import anthropic, openai_chat, openai_responses
from codecoder.providers.wire import WireCache
from tests.providers.sdk_shapes import shape_errors

READ = ToolSpec(
    name="read_file",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
ANTHROPIC_TOKEN = anthropic.encode_token(anthropic.ThinkingToken(signature="sig/+=="))
RESPONSES_TOKEN = openai_responses.encode_token(
    openai_responses.ReasoningToken(id="rs_1", summary=["Look first."], encrypted_content="gAAA")
)


def conversation(token: str | None) -> ProviderRequest:
    return ProviderRequest(
        system="You are a coding agent.",
        messages=(
            user_message("Fix the bug in a.py", 1),
            Message(
                id=2,
                role="assistant",
                items=(
                    Reasoning("Look first.", token=token),
                    Text("Let me look."),
                    ToolCall("call_1", "read_file", {"path": "a.py"}),
                    ToolCall("call_2", "run_command", {"command": "pytest -q"}),
                ),
            ),
            Message(
                id=3,
                role="tool",
                items=(
                    tool_result("call_1", "print(1)"),
                    tool_result("call_2", "1 failed", status="error"),
                ),
            ),
            Message(id=4, role="assistant", items=(Text("The test fa"),), status="interrupted"),
            user_message("go on", 5),
        ),
        tools=(READ,),
    )


# --- Chat Completions ----------------------------------------------------------------


def test_chat_body() -> None:
    body = openai_chat.build_body(conversation(None), "gpt-4.1", {})
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the bug in a.py"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "run_command", "arguments": '{"command":"pytest -q"}'},
                },
            ],
            "reasoning_content": "Look first.",
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "call_2", "content": "1 failed"},
        {"role": "assistant", "content": "The test fa"},
        {"role": "user", "content": "go on"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": READ.parameters,
            },
        }
    ]


def test_chat_body_fits_the_sdk_request_type() -> None:
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    body = openai_chat.build_body(conversation(None), "gpt-4.1", {"max_tokens": 100})
    extension = frozenset({"reasoning_content"})  # DeepSeek's field, sent back where it came
    assert shape_errors(body, CompletionCreateParamsStreaming, extra=extension) == []


# --- Responses -----------------------------------------------------------------------


def test_responses_body() -> None:
    body = openai_responses.build_body(conversation(RESPONSES_TOKEN), "gpt-5", {})
    assert body["instructions"] == "You are a coding agent."
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"summary": "auto"}
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "Fix the bug in a.py"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look first."}],
            "encrypted_content": "gAAA",
        },
        {"type": "message", "role": "assistant", "content": "Let me look."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": '{"path":"a.py"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "run_command",
            "arguments": '{"command":"pytest -q"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "print(1)"},
        {"type": "function_call_output", "call_id": "call_2", "output": "1 failed"},
        {"type": "message", "role": "assistant", "content": "The test fa"},
        {"type": "message", "role": "user", "content": "go on"},
    ]
    assert body["tools"][0] == {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": READ.parameters,
        "strict": False,
    }


def test_responses_body_fits_the_sdk_request_type() -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    body = openai_responses.build_body(
        conversation(RESPONSES_TOKEN), "gpt-5", {"reasoning_effort": "high", "max_tokens": 9}
    )
    assert body["reasoning"] == {"summary": "auto", "effort": "high"}
    assert shape_errors(body, ResponseCreateParamsStreaming) == []


def test_responses_sends_no_reasoning_it_cannot_prove() -> None:
    foreign = openai_responses.build_body(conversation(ANTHROPIC_TOKEN), "gpt-4.1", {})
    assert all(item.get("type") != "reasoning" for item in foreign["input"])
    assert "reasoning" not in foreign and "include" not in foreign  # not a reasoning model
    cut_short = Message(id=9, role="assistant", items=(Reasoning("hm", RESPONSES_TOKEN),))
    request = ProviderRequest(system="", messages=(user_message("hi", 1), cut_short))
    items = openai_responses.build_body(request, "gpt-5", {})["input"]
    assert items == [{"type": "message", "role": "user", "content": "hi"}]


# --- Anthropic -----------------------------------------------------------------------


def test_anthropic_body() -> None:
    body = anthropic.build_body(conversation(ANTHROPIC_TOKEN), "claude-sonnet-4-5", {})
    assert body["max_tokens"] == anthropic.DEFAULT_MAX_TOKENS and body["stream"] is True
    assert body["system"] == [
        {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": READ.parameters}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug in a.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look first.", "signature": "sig/+=="},
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "read_file",
                    "input": {"path": "a.py"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "run_command",
                    "input": {"command": "pytest -q"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "print(1)"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "1 failed",
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "The test fa"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}],
        },
    ]


def test_anthropic_body_fits_the_sdk_request_type() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    body = anthropic.build_body(
        conversation(ANTHROPIC_TOKEN), "claude-sonnet-4-5", {"thinking_budget": 2048}
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048
    assert shape_errors(body, MessageCreateParamsStreaming) == []


def test_anthropic_merges_roles_and_sends_only_signed_thinking() -> None:
    redacted = anthropic.encode_token(anthropic.ThinkingToken(redacted="opaque=="))
    history = (
        user_message("one", 1),
        Message(id=2, role="assistant", items=(Reasoning("", redacted), Text("ok"))),
        Message(id=3, role="assistant", items=(Reasoning("unsigned"), Text("more"))),
        Message(id=4, role="assistant", items=(Text(""),), status="interrupted"),
        user_message("two", 5),
        user_message("three", 6),
    )
    body = anthropic.build_body(ProviderRequest(system="", messages=history), "m", {})
    assert "system" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "text", "text": "ok"},
        {"type": "text", "text": "more"},
    ]
    assert [block["text"] for block in body["messages"][2]["content"]] == ["two", "three"]


# --- shared rules --------------------------------------------------------------------

MALFORMED = ToolCall("call_9", "read_file", {}, raw_args='{"path": "a.py"')


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_malformed_arguments_go_back_as_the_model_wrote_them(wire: str) -> None:
    request = ProviderRequest(
        system="",
        messages=(
            user_message("x", 1),
            Message(id=2, role="assistant", items=(MALFORMED,)),
            Message(id=3, role="tool", items=(tool_result("call_9", "", status="cancelled"),)),
        ),
    )
    text = str(_build(wire, request))
    assert '\'{"path": "a.py"\'' in text
    assert "(cancelled)" in text  # an empty result still says what happened


def test_extra_body_from_config_is_merged_last() -> None:
    request = ProviderRequest(system="s", messages=(user_message("x", 1),))
    options = {"extra_body": {"temperature": 0.2, "stream": True}}
    for wire in ("chat", "responses", "anthropic"):
        assert _build(wire, request, options)["temperature"] == 0.2


def _build(wire: str, request: ProviderRequest, options: dict[str, Any] | None = None) -> Any:
    module = {"chat": openai_chat, "responses": openai_responses, "anthropic": anthropic}[wire]
    return module.build_body(request, "gpt-5", options or {})


@pytest.mark.parametrize("wire", ["chat", "responses", "anthropic"])
def test_the_wire_cache_gives_the_same_bodies_and_translates_each_message_once(
    wire: str,
) -> None:
    module = {"chat": openai_chat, "responses": openai_responses, "anthropic": anthropic}[wire]
    cache = WireCache()
    first = conversation(ANTHROPIC_TOKEN if wire == "anthropic" else RESPONSES_TOKEN)
    longer = ProviderRequest(
        system=first.system, messages=(*first.messages, user_message("and then?", 99))
    )
    for request in (first, longer, longer):
        assert module.build_body(request, "m", {}, cache) == module.build_body(request, "m", {})

    def untranslated(message: Message) -> Any:
        raise AssertionError(f"message {message.id} was translated again")

    for message in longer.messages:
        cache.get(message, untranslated)  # every message's wire form is cached


def test_responses_reasoning_without_encrypted_content_is_not_sent_back() -> None:
    bare = openai_responses.encode_token(openai_responses.ReasoningToken(id="rs_2"))
    request = ProviderRequest(
        system="",
        messages=(
            user_message("x", 1),
            Message(id=2, role="assistant", items=(Reasoning("thought", bare), Text("answer"))),
            user_message("y", 3),
        ),
    )
    items = openai_responses.build_body(request, "custom-deployment", {})["input"]
    assert not any(item.get("type") == "reasoning" for item in items)
