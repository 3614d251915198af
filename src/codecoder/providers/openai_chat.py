"""OpenAI Chat Completions, and through it every OpenAI-compatible server (Ollama, vLLM,
llama.cpp, LM Studio, OpenRouter, DeepSeek, Groq …).

Request: system prompt as the first `system` message; assistant messages carry
`tool_calls` (arguments as JSON text) and, where a server streamed reasoning, the
`reasoning_content` extension back (DeepSeek and Kimi require it inside a tool loop);
each ToolResult is a `tool` message. Stream: `chat.completion.chunk` objects, tool-call
arguments split over many chunks by `index`, reasoning in `delta.reasoning_content`
(DeepSeek, vLLM) or `delta.reasoning` (OpenRouter, Ollama), usage in the last chunk
(`stream_options.include_usage`), then `data: [DONE]`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from codecoder.kernel.events import Usage
from codecoder.kernel.messages import Message, Reasoning, ToolCall, ToolResult
from codecoder.kernel.ports import (
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StreamEvent,
    TextDelta,
)
from codecoder.providers import errors
from codecoder.providers.accumulate import ToolCallAccumulator
from codecoder.providers.wire import (
    Options,
    WireCache,
    WireFormat,
    bearer,
    result_text,
    translate_all,
    with_extra,
)

# --- request -------------------------------------------------------------------------


def build_body(
    request: ProviderRequest, model: str, options: Options, cache: WireCache | None = None
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for wire in translate_all(request.messages, _wire_messages, cache):
        messages.extend(wire)
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]
    if options.get("max_tokens"):
        body["max_tokens"] = options["max_tokens"]
    if options.get("reasoning_effort"):
        body["reasoning_effort"] = options["reasoning_effort"]
    return with_extra(body, options)


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        assistant = _assistant(message)
        return [assistant] if assistant else []
    out = [
        {"role": "tool", "tool_call_id": item.tool_call_id, "content": result_text(item)}
        for item in message.items
        if isinstance(item, ToolResult)
    ]
    text = message.text
    if text:
        out.append({"role": "system" if message.role == "system" else "user", "content": text})
    return out


def _assistant(message: Message) -> dict[str, Any] | None:
    """None for a message with nothing to send (cancelled before its first token)."""
    calls = [item for item in message.items if isinstance(item, ToolCall)]
    text = message.text
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for call in calls
        ]
    reasoning = "".join(item.text for item in message.items if isinstance(item, Reasoning))
    if reasoning:
        out["reasoning_content"] = reasoning
    return out


def _arguments(call: ToolCall) -> str:
    """The model's own text when it was not JSON, so the model sees what it sent."""
    if call.raw_args is not None:
        return call.raw_args
    return msgspec.json.encode(call.args).decode()


# --- stream --------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCallPiece(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    content: str | list[Any] | None = None
    """A string; a list of typed parts from some servers (Mistral)."""
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallPiece] | None = None


class _Choice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: dict[str, Any] | None = None
    error: Any = None


_chunk_decoder = msgspec.json.Decoder(_Chunk)

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class StreamParser:
    __slots__ = ("_finish_reason", "_reasoning", "_tools", "_usage", "done")

    def __init__(self) -> None:
        self._tools = ToolCallAccumulator()
        self._reasoning = False
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self.done = False

    def parse_event(self, event: str, data: bytes) -> list[StreamEvent]:
        if data == b"[DONE]":
            return self._final()
        try:
            chunk = _chunk_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise errors.bad_response(f"unreadable chunk ({exc}): {data[:80]!r}") from exc
        if chunk.error is not None:
            raise errors.from_stream_error(chunk.error)
        out: list[StreamEvent] = []
        for choice in chunk.choices or ():
            if choice.index == 0:
                self._choice(choice, out)
        if chunk.usage:
            self._usage = _usage(chunk.usage)
        return out

    def _choice(self, choice: _Choice, out: list[StreamEvent]) -> None:
        delta = choice.delta
        if delta is not None:
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning:
                self._reasoning = True
                out.append(ReasoningDelta(reasoning))
            text = delta.content if isinstance(delta.content, str) else _parts(delta.content)
            if text:
                self._close_reasoning(out)
                out.append(TextDelta(text))
            if delta.tool_calls:
                self._close_reasoning(out)
                for piece in delta.tool_calls:
                    function = piece.function or _Function()
                    self._tools.add(
                        piece.index,
                        call_id=piece.id,
                        name=function.name,
                        args=function.arguments or "",
                    )
        if choice.finish_reason:
            self._finish_reason = choice.finish_reason

    def _close_reasoning(self, out: list[StreamEvent]) -> None:
        if self._reasoning:
            self._reasoning = False
            out.append(ReasoningDone())

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        if self._finish_reason is None:
            raise errors.stream_incomplete()
        return self._final()

    def _final(self) -> list[StreamEvent]:
        if self.done:
            return []
        self.done = True
        out: list[StreamEvent] = []
        self._close_reasoning(out)
        out.extend(self._tools.finish())
        if self._usage is not None:
            out.append(self._usage)
        reason = self._finish_reason or "stop"
        out.append(Stop(_STOP_REASONS.get(reason, reason)))
        return out


def _parts(parts: list[Any] | None) -> str:
    if not parts:
        return ""
    return "".join(
        str(part.get("text") or "")
        for part in parts
        if isinstance(part, dict) and part.get("type") == "text"
    )


def _usage(raw: dict[str, Any]) -> Usage:
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    cached = prompt_details.get("cached_tokens") or raw.get("prompt_cache_hit_tokens") or 0
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(cached),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )


WIRE = WireFormat(
    name="chat",
    path="/chat/completions",
    models_path="/models",
    build_body=build_body,
    new_parser=StreamParser,
    auth_headers=bearer,
)
