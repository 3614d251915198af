"""OpenAI Responses (`POST /responses`), the wire OpenAI's own agents use.

Request: `instructions` = the system prompt, `input` = history as items (messages,
`function_call`, `function_call_output`, `reasoning`), `store: false` (we send the whole
history each round; nothing needs keeping on the server). Reasoning models return their
reasoning as items whose `encrypted_content` must come back in later rounds: the item's
id, summary and encrypted content travel in `Reasoning.token` (JSON) and are sent back
unchanged, each right before the item it preceded.

Stream: typed semantic events (`response.output_item.added`, `…output_text.delta`,
`…reasoning_summary_text.delta`, `…function_call_arguments.delta`,
`…output_item.done`, `response.completed` with usage), no `[DONE]`.
"""

from __future__ import annotations

from typing import Any

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
    bearer,
    decode_event,
    encode_token,
    result_text,
    translate_all,
    with_extra,
)

_REASONING_PREFIXES = ("gpt-5", "o1", "o3", "o4", "codex")

# --- reasoning token -----------------------------------------------------------------


class ReasoningToken(
    msgspec.Struct, frozen=True, tag="responses", tag_field="wire", omit_defaults=True
):
    """What `Reasoning.token` holds for this wire (JSON, tagged so other wires skip it)."""

    id: str
    summary: list[str] = []
    encrypted_content: str | None = None


def decode_token(token: str | None) -> ReasoningToken | None:
    return wire.decode_token(token, ReasoningToken)


# --- request -------------------------------------------------------------------------


def build_body(
    request: ProviderRequest, model: str, options: Options, cache: WireCache | None = None
) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for translated in translate_all(request.messages, _input_items, cache):
        items.extend(translated)
    body: dict[str, Any] = {"model": model, "input": items, "stream": True, "store": False}
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": False,
            }
            for tool in request.tools
        ]
    effort = options.get("reasoning_effort")
    if effort or model.startswith(_REASONING_PREFIXES):
        body["reasoning"] = {"summary": "auto", **({"effort": effort} if effort else {})}
        body["include"] = ["reasoning.encrypted_content"]
    if options.get("max_tokens"):
        body["max_output_tokens"] = options["max_tokens"]
    return with_extra(body, options)


def _input_items(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return _assistant_items(message)
    out: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": item.tool_call_id, "output": result_text(item)}
        for item in message.items
        if isinstance(item, ToolResult)
    ]
    text = message.text
    if text:
        role = "system" if message.role == "system" else "user"
        out.append({"type": "message", "role": role, "content": text})
    return out


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    """Items in the order the model produced them; consecutive text joins one message."""
    out: list[dict[str, Any]] = []
    for item in message.items:
        if isinstance(item, Text):
            if out and out[-1].get("role") == "assistant":
                out[-1]["content"] += item.text
            elif item.text:
                out.append({"type": "message", "role": "assistant", "content": item.text})
        elif isinstance(item, ToolCall):
            out.append(_function_call(item))
        elif isinstance(item, Reasoning):
            reasoning = _reasoning_item(item)
            if reasoning is not None:
                out.append(reasoning)
    # A reasoning item must be followed by the output it led to (a cancelled reply may
    # end right after one); the API rejects it alone.
    while out and out[-1]["type"] == "reasoning":
        out.pop()
    return out


def _function_call(call: ToolCall) -> dict[str, Any]:
    arguments = call.raw_args if call.raw_args is not None else msgspec.json.encode(call.args)
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments if isinstance(arguments, str) else arguments.decode(),
    }


def _reasoning_item(item: Reasoning) -> dict[str, Any] | None:
    """Only reasoning that carries its encrypted content goes back: with `store: false`
    the server keeps nothing, and an item sent by id alone fails the whole request."""
    token = decode_token(item.token)
    if token is None or token.encrypted_content is None:
        return None
    return {
        "type": "reasoning",
        "id": token.id,
        "summary": [{"type": "summary_text", "text": text} for text in token.summary],
        "encrypted_content": token.encrypted_content,
    }


# --- stream --------------------------------------------------------------------------


class StreamParser:
    __slots__ = ("_tools", "done")

    def __init__(self) -> None:
        self._tools = ToolCallAccumulator()
        self.done = False

    def parse_event(self, event: str, data: bytes) -> list[StreamEvent]:
        payload = decode_event(data)
        kind = payload.get("type") or event
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return [TextDelta(payload["delta"])] if payload.get("delta") else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [ReasoningDelta(payload["delta"])] if payload.get("delta") else []
        if kind == "response.reasoning_summary_part.added" and payload.get("summary_index"):
            return [ReasoningDelta("\n\n")]
        if kind == "response.function_call_arguments.delta":
            self._tools.add(payload.get("output_index"), args=payload.get("delta", ""))
            return []
        if kind == "response.output_item.added":
            return self._item_added(payload)
        if kind == "response.output_item.done":
            return self._item_done(payload)
        if kind in ("response.completed", "response.incomplete"):
            return self._final(payload.get("response") or {})
        if kind == "response.failed":
            response = payload.get("response") or {}
            raise errors.from_stream_error(response.get("error") or {"message": "failed"})
        if kind == "error":
            raise errors.from_stream_error(payload.get("error") or payload)
        return []

    def _item_added(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = payload.get("item") or {}
        if item.get("type") != "function_call":
            return []
        self._tools.add(
            payload.get("output_index"),
            call_id=item.get("call_id"),
            name=item.get("name"),
            args=item.get("arguments") or "",
        )
        return []

    def _item_done(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = payload.get("item") or {}
        kind = item.get("type")
        key = payload.get("output_index")
        if kind == "function_call":
            # (a server that skipped output_item.added still gets its call through)
            self._tools.add(key, call_id=item.get("call_id"), name=item.get("name"))
            if isinstance(item.get("arguments"), str):
                self._tools.set_args(key, item["arguments"])
            done = self._tools.finish_one(key)
            return [done] if done is not None else []
        if kind == "reasoning":
            token = ReasoningToken(
                id=str(item.get("id") or ""),
                summary=[part.get("text", "") for part in item.get("summary") or ()],
                encrypted_content=item.get("encrypted_content"),
            )
            return [ReasoningDone(encode_token(token))]
        return []

    def _final(self, response: dict[str, Any]) -> list[StreamEvent]:
        self.done = True
        out: list[StreamEvent] = list(self._tools.finish())
        if response.get("usage"):
            out.append(_usage(response["usage"]))
        out.append(Stop(self._stop_reason(response)))
        return out

    def _stop_reason(self, response: dict[str, Any]) -> str:
        if response.get("status") == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason") or "incomplete"
            return "max_tokens" if reason == "max_output_tokens" else str(reason)
        return "tool_use" if self._tools.count else "end_turn"

    def finish(self) -> list[StreamEvent]:
        if not self.done:
            raise errors.stream_incomplete()
        return []


def _usage(raw: dict[str, Any]) -> Usage:
    input_details = raw.get("input_tokens_details") or {}
    output_details = raw.get("output_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cached_tokens=int(input_details.get("cached_tokens") or 0),
        reasoning_tokens=int(output_details.get("reasoning_tokens") or 0),
    )


WIRE = WireFormat(
    name="responses",
    path="/responses",
    models_path="/models",
    build_body=build_body,
    new_parser=StreamParser,
    auth_headers=bearer,
)
