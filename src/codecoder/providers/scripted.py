"""The scripted provider: replays a `codecoder-script/1` file (docs/script-format.md).

A faithful fake at the provider edge: it speaks the same StreamEvents as the HTTP
adapters, streams text token by token, can go silent (`sleep`) or fail (`error`), and is
what tests, the offline demo and session replay run on.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Usage
from codecoder.kernel.ports import (
    ProviderError,
    ProviderErrorKind,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCallDone,
)

FORMAT = "codecoder-script/1"
_TOKEN = re.compile(r"\S+\s*|\s+")


class ScriptError(Exception):
    """The script cannot be read or does not follow the format (exit code 2)."""


class TextPart(
    msgspec.Struct, frozen=True, tag="text", tag_field="type", forbid_unknown_fields=True
):
    text: str


class ReasoningPart(
    msgspec.Struct, frozen=True, tag="reasoning", tag_field="type", forbid_unknown_fields=True
):
    text: str
    token: str | None = None


class ToolCallPart(
    msgspec.Struct, frozen=True, tag="tool_call", tag_field="type", forbid_unknown_fields=True
):
    name: str
    args: dict[str, Any] | None = None
    raw_args: str | None = None


MAX_SECONDS = 86_400.0
Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_SECONDS)]
"""A pause of a script: 0 to one day (negative, infinite and NaN pauses are refused)."""


class SleepPart(
    msgspec.Struct, frozen=True, tag="sleep", tag_field="type", forbid_unknown_fields=True
):
    seconds: Seconds


class UsagePart(
    msgspec.Struct, frozen=True, tag="usage", tag_field="type", forbid_unknown_fields=True
):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class ErrorPart(
    msgspec.Struct, frozen=True, tag="error", tag_field="type", forbid_unknown_fields=True
):
    kind: ProviderErrorKind
    message: str | None = None


Part = TextPart | ReasoningPart | ToolCallPart | SleepPart | UsagePart | ErrorPart


class Reply(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    parts: list[Part]
    token_delay: Seconds = 0.0


class SubagentScript(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    match: str
    replies: list[Reply]


class Script(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    format: Literal["codecoder-script/1"]
    replies: list[Reply]
    compaction: list[Reply] = []
    subagents: list[SubagentScript] = []


def parse_script(data: bytes | str) -> Script:
    """Parse a script; the shorthand (a bare list of replies, each a list of parts,
    a part given as a plain string meaning text) is accepted too."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ScriptError(f"not JSON: {exc}") from exc
    if isinstance(raw, list):
        raw = {"format": FORMAT, "replies": raw}
    if isinstance(raw, dict):
        for key in ("replies", "compaction"):
            raw[key] = _expand_replies(raw.get(key, []), key)
        for sub in _list(raw.get("subagents", []), "subagents"):
            if isinstance(sub, dict):
                sub["replies"] = _expand_replies(sub.get("replies", []), "subagents.replies")
    try:
        script = msgspec.convert(raw, type=Script)
    except msgspec.ValidationError as exc:
        raise ScriptError(str(exc)) from exc
    for part in _all_parts(script):
        if isinstance(part, ToolCallPart) and (part.args is None) == (part.raw_args is None):
            raise ScriptError(f"tool_call {part.name!r} needs exactly one of args and raw_args")
    for sub in script.subagents:
        try:
            re.compile(sub.match)
        except re.error as exc:
            raise ScriptError(f"subagent match {sub.match!r}: {exc}") from exc
    return script


def load_script(path: Path | str) -> Script:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}") from exc
    try:
        return parse_script(data)
    except ScriptError as exc:
        raise ScriptError(f"bad script {path}: {exc}") from exc


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ScriptError(f"{where} must be a list, not {type(value).__name__}")
    return value


def _expand_replies(replies: object, where: str) -> list[object]:
    return [_expand_reply(reply) for reply in _list(replies, where)]


def _expand_reply(reply: object) -> object:
    if isinstance(reply, list):
        reply = {"parts": reply}
    if isinstance(reply, dict) and isinstance(reply.get("parts"), list):
        reply["parts"] = [
            {"type": "text", "text": p} if isinstance(p, str) else p for p in reply["parts"]
        ]
    return reply


def _all_parts(script: Script) -> Iterator[Part]:
    replies = [*script.replies, *script.compaction]
    for sub in script.subagents:
        replies.extend(sub.replies)
    for reply in replies:
        yield from reply.parts


class ScriptedProvider:
    """Replays replies in order: one per request. Compaction requests take the
    `compaction` replies; `for_subagent(task)` gives a sub-agent its own provider."""

    def __init__(self, script: Script, *, name: str = "scripted") -> None:
        self.script = script
        self.name = name
        self._lock = threading.Lock()
        self._cursor = {"turn": 0, "compaction": 0}
        self._claimed: set[int] = set()

    @classmethod
    def from_replies(cls, replies: list[Any]) -> ScriptedProvider:
        return cls(parse_script(msgspec.json.encode(replies)))

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        replies = self.script.compaction if request.purpose == "compaction" else self.script.replies
        with self._lock:
            index = self._cursor[request.purpose]
            self._cursor[request.purpose] = index + 1
        if index >= len(replies):
            raise ProviderError(
                "script_exhausted",
                f"the script has no {request.purpose} reply left ({len(replies)} used)",
            )
        return _play(replies[index], index, cancel)

    def for_subagent(self, task: str) -> ScriptedProvider | None:
        """The first unclaimed `subagents` entry whose regex matches the task."""
        with self._lock:
            for position, sub in enumerate(self.script.subagents):
                if position not in self._claimed and re.search(sub.match, task):
                    self._claimed.add(position)
                    child = Script(format=FORMAT, replies=sub.replies)
                    return ScriptedProvider(child, name=f"{self.name}/sub{position}")
        return None


def _play(reply: Reply, index: int, cancel: CancelToken) -> Iterator[StreamEvent]:
    delay = reply.token_delay
    calls = 0
    for position, part in enumerate(reply.parts):
        if cancel.is_cancelled():
            return
        if isinstance(part, TextPart):
            for match in _TOKEN.finditer(part.text):
                if delay and cancel.wait(delay):
                    return
                yield TextDelta(match.group())
        elif isinstance(part, ReasoningPart):
            for match in _TOKEN.finditer(part.text):
                if delay and cancel.wait(delay):
                    return
                yield ReasoningDelta(match.group())
            yield ReasoningDone(part.token)
        elif isinstance(part, ToolCallPart):
            calls += 1
            raw = (
                part.raw_args
                if part.raw_args is not None
                else msgspec.json.encode(part.args).decode()
            )
            yield ToolCallDone(id=f"call_{index}_{position}", name=part.name, raw_args=raw)
        elif isinstance(part, SleepPart):
            if cancel.wait(part.seconds):
                return
        elif isinstance(part, UsagePart):
            yield Usage(
                input_tokens=part.input_tokens,
                output_tokens=part.output_tokens,
                cached_tokens=part.cached_tokens,
                reasoning_tokens=part.reasoning_tokens,
            )
        else:
            raise ProviderError(part.kind, part.message or f"scripted {part.kind} error")
    yield Stop("tool_use" if calls else "end_turn")
