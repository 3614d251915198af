"""The official SDKs as reference parsers (test-only dependencies).

Each SDK's own streaming helper is pointed at the fake wire server: if a fake drifted from
the public protocol, the SDK would fail to accumulate its stream or would read different
values. Then the SDK's own request body for a conversation is compared with ours for the
same kernel conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from codecoder.kernel.messages import Message, Text, ToolCall, tool_result, user_message
from codecoder.kernel.ports import ProviderRequest, ToolSpec
from codecoder.providers import anthropic as anthropic_wire
from codecoder.providers import openai_chat, openai_responses
from tests.fakes.wire_server import Call, Reply, Think, Use, WireServer
from tests.fakes.wire_server import Text as SText

openai = pytest.importorskip("openai")
anthropic_sdk = pytest.importorskip("anthropic")

ARGS_A = '{"path": "src/app.py"}'
ARGS_B = '{"command": "pytest -q", "timeout": 30}'
SCRIPT = Reply(
    (
        Think(
            "Read the file, then run the tests.",
            chunk=4,
            signature="c2lnbmF0dXJl",
            encrypted="gAAAAB",
        ),
        SText("I will look at the code.", chunk=1),
        Call("read_file", ARGS_A, id="call_a", chunk=1),
        Call("run_command", ARGS_B, id="call_b", chunk=3),
        Use(input=1200, output=80, cached=1000, reasoning=40),
    )
)
PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}}
SPEC = ToolSpec(name="read_file", description="Read a file", parameters=PARAMS)


@pytest.fixture(scope="module")
def fake() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def _kernel_conversation() -> ProviderRequest:
    return ProviderRequest(
        system="Be brief.",
        messages=(
            user_message("Open app.py", 1),
            Message(
                id=2,
                role="assistant",
                items=(Text("Opening."), ToolCall("call_a", "read_file", {"path": "app.py"})),
            ),
            Message(id=3, role="tool", items=(tool_result("call_a", "print('hi')"),)),
        ),
        tools=(SPEC,),
    )


def test_chat_fake_parses_with_the_openai_sdk(fake: WireServer) -> None:
    fake.enqueue(SCRIPT)
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Open app.py"},
        {
            "role": "assistant",
            "content": "Opening.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"app.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "print('hi')"},
    ]
    tool: Any = {
        "type": "function",
        "function": {"name": "read_file", "description": "Read a file", "parameters": PARAMS},
    }
    with (
        openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0) as client,
        client.chat.completions.stream(
            model="fake-model",
            messages=messages,
            tools=[{**tool, "function": {**tool["function"], "strict": True}}],
            stream_options={"include_usage": True},
        ) as stream,
    ):
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "I will look at the code."
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        ("call_a", "read_file", ARGS_A),
        ("call_b", "run_command", ARGS_B),
    ]
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (1200, 80)
    sent = fake.posts[-1].json
    ours = openai_chat.build_body(_kernel_conversation(), "fake-model", {})
    assert ours["messages"] == sent["messages"]
    assert ours["tools"] == [tool]
    assert {key: sent[key] for key in ("stream", "stream_options")} == {
        key: ours[key] for key in ("stream", "stream_options")
    }


def test_responses_fake_parses_with_the_openai_sdk(fake: WireServer) -> None:
    fake.enqueue(SCRIPT)
    items: list[Any] = [
        {"type": "message", "role": "user", "content": "Open app.py"},
        {"type": "message", "role": "assistant", "content": "Opening."},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "read_file",
            "arguments": '{"path":"app.py"}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "print('hi')"},
    ]
    tool: Any = {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": PARAMS,
        "strict": False,
    }
    with (
        openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0) as client,
        client.responses.stream(
            model="fake-model", instructions="Be brief.", input=items, tools=[tool], store=False
        ) as stream,
    ):
        final = stream.get_final_response()
    kinds = [item.type for item in final.output]
    assert kinds == ["reasoning", "message", "function_call", "function_call"]
    reasoning, message, call_a, call_b = final.output
    assert reasoning.encrypted_content == "gAAAAB"  # type: ignore[union-attr]
    assert reasoning.summary[0].text == "Read the file, then run the tests."  # type: ignore[union-attr]
    assert message.content[0].text == "I will look at the code."  # type: ignore[union-attr]
    assert (call_a.call_id, call_a.arguments) == ("call_a", ARGS_A)  # type: ignore[union-attr]
    assert (call_b.name, call_b.arguments) == ("run_command", ARGS_B)  # type: ignore[union-attr]
    assert final.usage is not None and final.usage.input_tokens_details.cached_tokens == 1000
    assert final.usage.output_tokens_details.reasoning_tokens == 40
    sent = fake.posts[-1].json
    ours = openai_responses.build_body(_kernel_conversation(), "fake-model", {})
    for key in ("instructions", "input", "tools", "store", "stream"):
        assert ours[key] == sent[key], key


def test_anthropic_fake_parses_with_the_anthropic_sdk(fake: WireServer) -> None:
    fake.enqueue(SCRIPT)
    messages: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "Open app.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Opening."},
                {
                    "type": "tool_use",
                    "id": "call_a",
                    "name": "read_file",
                    "input": {"path": "app.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a",
                    "content": "print('hi')",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]
    tool: Any = {"name": "read_file", "description": "Read a file", "input_schema": PARAMS}
    system: Any = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    with (
        anthropic_sdk.Anthropic(api_key="sk-test", base_url=fake.url, max_retries=0) as client,
        client.messages.stream(
            model="fake-model", max_tokens=8192, system=system, messages=messages, tools=[tool]
        ) as stream,
    ):
        final = stream.get_final_message()
    kinds = [block.type for block in final.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    thinking, text, call_a, call_b = final.content
    assert thinking.signature == "c2lnbmF0dXJl"  # type: ignore[union-attr]
    assert thinking.thinking == "Read the file, then run the tests."  # type: ignore[union-attr]
    assert text.text == "I will look at the code."  # type: ignore[union-attr]
    assert (call_a.id, call_a.input) == ("call_a", {"path": "src/app.py"})  # type: ignore[union-attr]
    assert call_b.input == {"command": "pytest -q", "timeout": 30}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens) == (200, 1000)
    assert final.usage.output_tokens == 80
    sent = fake.posts[-1].json
    ours = anthropic_wire.build_body(_kernel_conversation(), "fake-model", {})
    for key in ("system", "messages", "tools", "max_tokens", "stream"):
        assert ours[key] == sent[key], key
