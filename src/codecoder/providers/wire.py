"""What every wire adapter provides, and the small helpers they share.

An adapter is a pure translator (STYLE.md, mistral-vibe's prepare_request/parse_response):
`build_body` turns kernel history into the wire's JSON, a `StreamParser` turns the wire's
SSE events into kernel `StreamEvent`s. Neither touches the network; `WireClient` joins an
adapter to an endpoint and the HTTP path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar, cast

import msgspec

from codecoder.kernel.messages import Message, ToolResult
from codecoder.kernel.ports import ProviderRequest, StreamEvent
from codecoder.providers import errors

T = TypeVar("T")
WireName = Literal["chat", "responses", "anthropic"]
Options = Mapping[str, Any]
"""Per-provider settings from config: max_tokens, reasoning_effort, thinking_budget,
extra_body (merged into every request body)."""


class StreamParser(Protocol):
    """Folds one reply's SSE events. `done` turns true at the wire's final event."""

    done: bool

    def parse_event(self, event: str, data: bytes) -> list[StreamEvent]:
        """The kernel events for one SSE event; raises ProviderError on an error event."""
        ...

    def finish(self) -> list[StreamEvent]:
        """Called when the body ends; raises ProviderError if the reply is incomplete."""
        ...


class WireFormat(msgspec.Struct, frozen=True):
    name: WireName
    path: str
    """Appended to the provider's base URL for the streaming POST."""
    models_path: str
    """Appended to the base URL for the model list (`codecoder doctor`)."""
    build_body: Callable[[ProviderRequest, str, Options, WireCache | None], dict[str, Any]]
    new_parser: Callable[[], StreamParser]
    auth_headers: Callable[[str | None], dict[str, str]]


class WireCache:
    """Each kernel message's wire form, kept per client across requests.

    History is append-only between compactions, so round N+1 re-sends N rounds of
    messages that were already translated; on a 10,000-message session translating them
    all costs 25-45 ms per request. Entries are keyed by the message object itself
    (identity, checked), hold values the adapters never mutate, and are dropped when
    their messages have left the view.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Message, Any]] = {}

    def get(self, message: Message, translate: Callable[[Message], T]) -> T:
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        value = translate(message)
        self._entries[id(message)] = (message, value)
        return value

    def keep_only(self, view: Sequence[Message]) -> None:
        """Forget messages that are no longer sent (after a compaction)."""
        if len(self._entries) > 2 * len(view) + 64:
            live = {id(m) for m in view}
            self._entries = {k: v for k, v in self._entries.items() if k in live}


def translate_all(
    messages: Sequence[Message], translate: Callable[[Message], T], cache: WireCache | None
) -> list[T]:
    """Every message's wire form, through the cache when there is one."""
    if cache is None:
        return [translate(m) for m in messages]
    cache.keep_only(messages)
    return [cache.get(m, translate) for m in messages]


S = TypeVar("S", bound=msgspec.Struct)


def encode_token(token: msgspec.Struct) -> str:
    """A wire's reasoning proof as `Reasoning.token`: JSON tagged with the wire's name."""
    return msgspec.json.encode(token).decode()


def decode_token(token: str | None, kind: type[S]) -> S | None:
    """The wire's own token, or None for a missing one or one another wire wrote."""
    if not token:
        return None
    try:
        return msgspec.json.decode(token, type=kind)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


_decoder = msgspec.json.Decoder()


def decode_event(data: bytes) -> dict[str, Any]:
    """One event's JSON object; anything else is a bad response."""
    try:
        value = _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise errors.bad_response(f"event is not JSON ({exc}): {data[:80]!r}") from exc
    if not isinstance(value, dict):
        raise errors.bad_response(f"event is not a JSON object: {data[:80]!r}")
    return cast(dict[str, Any], value)


def result_text(result: ToolResult) -> str:
    """A tool result's text; never empty, since several wires reject empty content."""
    text = result.text
    if text:
        return text
    return "(no output)" if result.status == "success" else f"({result.status})"


def bearer(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def with_extra(body: dict[str, Any], options: Options) -> dict[str, Any]:
    """Merge `extra_body` from config last, so users can set what we do not model."""
    extra = options.get("extra_body")
    if isinstance(extra, Mapping):
        body.update(cast(Mapping[str, Any], extra))
    return body
