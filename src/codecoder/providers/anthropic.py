"""Anthropic Messages (`POST /v1/messages`).

Request: `system` as a text block, history as alternating user/assistant messages of
content blocks (kernel `tool` messages become user messages of `tool_result` blocks, and
consecutive messages of one role are merged), `tool_use` with the parsed input, thinking
blocks sent back unchanged with their signatures (`Reasoning.token` holds the signature,
or the data of a redacted block, as tagged JSON). Prompt caching: the system block and the
last block of the conversation carry `cache_control`, so each round reads the previous
round's prefix from the cache.

Stream: named events `message_start` (input usage), `content_block_start/delta/stop`
(`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`), `message_delta`
(stop_reason, output usage), `message_stop`; `ping` and unknown events are ignored, an
`error` event raises.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from codecoder.kernel.events import Usage
from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall, ToolResult
from codecoder.kernel.ports import (
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StreamEvent,
    TextDelta,
)
from codecoder.providers import errors, wire
from codecoder.providers.accumulate import ToolCallAccumulator
from codecoder.providers.wire import (
    Options,
    WireCache,
    WireFormat,
    decode_event,
    encode_token,
    result_text,
    translate_all,
    with_extra,
)

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
_EPHEMERAL = {"type": "ephemeral"}

# --- reasoning token -----------------------------------------------------------------


class ThinkingToken(
    msgspec.Struct, frozen=True, tag="anthropic", tag_field="wire", omit_defaults=True
):
    """`Reasoning.token` for this wire: a thinking block's signature, or the opaque data
    of a redacted_thinking block (then the Reasoning's text is empty)."""

    signature: str | None = None
    redacted: str | None = None


def decode_token(token: str | None) -> ThinkingToken | None:
    return wire.decode_token(token, ThinkingToken)


# --- request -------------------------------------------------------------------------


def build_body(
    request: ProviderRequest, model: str, options: Options, cache: WireCache | None = None
) -> dict[str, Any]:
    budget = options.get("thinking_budget")
    max_tokens = options.get("max_tokens") or DEFAULT_MAX_TOKENS + (budget or 0)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": _messages(request.messages, cache),
        "stream": True,
    }
    if request.system:
        body["system"] = [{"type": "text", "text": request.system, "cache_control": _EPHEMERAL}]
    if request.tools:
        body["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in request.tools
        ]
    if budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return with_extra(body, options)


def _messages(history: tuple[Message, ...], cache: WireCache | None) -> list[dict[str, Any]]:
    """Consecutive messages of one role merge (tool results join one user turn); the
    cached blocks are shared, so each turn's content list is a fresh one."""
    out: list[dict[str, Any]] = []
    for message, blocks in zip(history, translate_all(history, _blocks, cache), strict=True):
        if not blocks:
            continue  # e.g. an assistant reply cancelled before its first token
        role = "assistant" if message.role == "assistant" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})
    if out and out[-1]["role"] == "user":
        last = out[-1]["content"][-1]
        out[-1]["content"][-1] = {**last, "cache_control": _EPHEMERAL}
    return out


def _blocks(message: Message) -> tuple[dict[str, Any], ...]:
    return tuple(block for item in message.items if (block := _block(item)) is not None)


def _block(item: Text | Reasoning | ToolCall | ToolResult) -> dict[str, Any] | None:
    if isinstance(item, Text):
        return {"type": "text", "text": item.text} if item.text else None
    if isinstance(item, ToolCall):
        return {"type": "tool_use", "id": item.id, "name": item.name, "input": item.args}
    if isinstance(item, ToolResult):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": item.tool_call_id,
            "content": result_text(item),
        }
        if item.status != "success":
            block["is_error"] = True
        return block
    return _thinking_block(item)


def _thinking_block(item: Reasoning) -> dict[str, Any] | None:
    """Only signed thinking goes back: unsigned (or another wire's) reasoning is rejected."""
    token = decode_token(item.token)
    if token is None:
        return None
    if token.redacted is not None:
        return {"type": "redacted_thinking", "data": token.redacted}
    if token.signature is None:
        return None
    return {"type": "thinking", "thinking": item.text, "signature": token.signature}


# --- stream --------------------------------------------------------------------------


class _Block:
    __slots__ = ("kind", "redacted", "signature")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.signature: str | None = None
        self.redacted: str | None = None


class StreamParser:
    __slots__ = ("_blocks", "_stop_reason", "_tools", "_usage", "done")

    def __init__(self) -> None:
        self._tools = ToolCallAccumulator()
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self.done = False

    def parse_event(self, event: str, data: bytes) -> list[StreamEvent]:
        payload = decode_event(data)
        kind = payload.get("type") or event
        if kind == "content_block_delta":
            return self._delta(payload.get("index", 0), payload.get("delta") or {})
        if kind == "content_block_start":
            return self._start(payload.get("index", 0), payload.get("content_block") or {})
        if kind == "content_block_stop":
            return self._stop(payload.get("index", 0))
        if kind == "message_start":
            self._add_usage((payload.get("message") or {}).get("usage"))
        elif kind == "message_delta":
            self._stop_reason = (payload.get("delta") or {}).get("stop_reason") or self._stop_reason
            self._add_usage(payload.get("usage"))
        elif kind == "message_stop":
            return self._final()
        elif kind == "error":
            raise errors.from_stream_error(payload.get("error") or payload)
        return []

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = str(block.get("type"))
        state = self._blocks[index] = _Block(kind)
        if kind == "text" and block.get("text"):
            return [TextDelta(block["text"])]
        if kind == "thinking" and block.get("thinking"):
            return [ReasoningDelta(block["thinking"])]
        if kind == "redacted_thinking":
            state.redacted = str(block.get("data") or "")
        elif kind == "tool_use":
            initial = block.get("input")
            args = msgspec.json.encode(initial).decode() if initial else ""
            self._tools.add(index, call_id=block.get("id"), name=block.get("name"), args=args)
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            return [TextDelta(delta["text"])] if delta.get("text") else []
        if kind == "input_json_delta":
            self._tools.add(index, args=delta.get("partial_json") or "")
        if kind == "thinking_delta":
            return [ReasoningDelta(delta["thinking"])] if delta.get("thinking") else []
        if kind == "signature_delta":
            block = self._blocks.get(index)
            if block is not None:  # it replaces, as the SDK's accumulator does
                block.signature = str(delta.get("signature") or "")
        return []

    def _stop(self, index: int) -> list[StreamEvent]:
        block = self._blocks.pop(index, None)
        if block is None:
            return []
        if block.kind == "tool_use":
            done = self._tools.finish_one(index)
            return [done] if done is not None else []
        if block.kind == "thinking":
            token = ThinkingToken(signature=block.signature)
            return [ReasoningDone(encode_token(token) if block.signature else None)]
        if block.kind == "redacted_thinking":
            return [ReasoningDone(encode_token(ThinkingToken(redacted=block.redacted)))]
        return []

    def _add_usage(self, usage: object) -> None:
        """Counts in message_delta are cumulative: a later value replaces an earlier one."""
        if isinstance(usage, dict):
            for key, value in cast(dict[str, object], usage).items():
                if isinstance(value, int):
                    self._usage[key] = value

    def _final(self) -> list[StreamEvent]:
        self.done = True
        out: list[StreamEvent] = list(self._tools.finish())
        out.append(_usage(self._usage))
        out.append(Stop(self._stop_reason or "end_turn"))
        return out

    def finish(self) -> list[StreamEvent]:
        if not self.done:
            raise errors.stream_incomplete()
        return []


def _usage(raw: dict[str, int]) -> Usage:
    """`input_tokens` counts only uncached input here; ours counts all of it (as OpenAI)."""
    cache_read = raw.get("cache_read_input_tokens", 0)
    cache_write = raw.get("cache_creation_input_tokens", 0)
    return Usage(
        input_tokens=raw.get("input_tokens", 0) + cache_read + cache_write,
        output_tokens=raw.get("output_tokens", 0),
        cached_tokens=cache_read,
    )


def auth_headers(api_key: str | None) -> dict[str, str]:
    headers = {"anthropic-version": API_VERSION}
    if api_key:
        headers["x-api-key"] = api_key
    return headers


WIRE = WireFormat(
    name="anthropic",
    path="/v1/messages",
    models_path="/v1/models",
    build_body=build_body,
    new_parser=StreamParser,
    auth_headers=auth_headers,
)
