"""A session as people read it (a terminal transcript, Markdown) and as tools read it (JSONL).

Pure functions from stored values to text: the CLI prints them, the daemon may serve
them. Exports show the full stored history, never a compacted view.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence

from codecoder.kernel.codec import encode
from codecoder.kernel.messages import Message, MessageItem, Reasoning, Text, ToolCall, ToolResult
from codecoder.sessions.records import SessionInfo
from codecoder.wording import counted

SHOW_RESULT_LINES = 8
SHOW_LINE_CHARS = 200


def jsonl(messages: Iterable[Message]) -> Iterator[bytes]:
    """One message per line in the kernel's lossless JSON form (decodes back to Message)."""
    for message in messages:
        yield encode(message) + b"\n"


def age(seconds: float) -> str:
    """'just now', '3m ago', '5h ago', '2d ago'; a date past four weeks."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    if seconds < 28 * 86400:
        return f"{int(seconds // 86400)}d ago"
    return time.strftime("%Y-%m-%d", time.localtime(time.time() - seconds))


def transcript(info: SessionInfo, messages: Sequence[Message], now: float | None = None) -> str:
    """The session for a terminal: a header, then each message with long results cut."""
    lines = _header(info, now if now is not None else time.time())
    for message in messages:
        status = " (interrupted)" if message.status == "interrupted" else ""
        lines += ["", f"[{message.id}] {message.role}{status}"]
        for item in message.items:
            lines += _show_item(item)
    return "\n".join(lines) + "\n"


def markdown(info: SessionInfo, messages: Sequence[Message]) -> str:
    """The complete session as a Markdown document (nothing shortened)."""
    parts = [f"# {info.title or 'Untitled session'}", "", *_md_header(info)]
    for message in messages:
        status = " (interrupted)" if message.status == "interrupted" else ""
        parts += ["", f"## {message.role.capitalize()} · #{message.id}{status}"]
        for item in message.items:
            parts += ["", *_md_item(item)]
    return "\n".join(parts) + "\n"


def _header(info: SessionInfo, now: float) -> list[str]:
    lines = [
        f"session  {info.id}",
        f"title    {info.title or '(untitled)'}",
        f"folder   {info.cwd}",
        f"model    {info.model} · {counted(info.turns, 'turn')} · "
        f"{counted(info.message_count, 'message')}",
        f"tokens   {_tokens(info)}",
        f"updated  {age(now - info.updated_at)}",
    ]
    if info.parent_id is not None:
        lines.append(f"forked   from {info.parent_id[:8]} at message {info.fork_message_id}")
    return lines


def _tokens(info: SessionInfo) -> str:
    text = f"{info.input_tokens:,} in · {info.output_tokens:,} out · {info.cached_tokens:,} cached"
    return text if info.cost is None else f"{text} · ${info.cost:.4f}"


def _show_item(item: MessageItem) -> list[str]:
    if isinstance(item, Text):
        return ["  " + line for line in item.text.splitlines() or [""]]
    if isinstance(item, Reasoning):
        first = item.text.strip().splitlines()[0] if item.text.strip() else ""
        return [f"  · thinking: {_cut(first)}"]
    if isinstance(item, ToolCall):
        args = item.raw_args if item.raw_args is not None else json.dumps(item.args)
        return [f"  → {item.name} {_cut(args)}  ({item.id})"]
    return _show_result(item)


def _show_result(result: ToolResult) -> list[str]:
    lines = result.text.splitlines()
    shown = [f"  ← {result.tool_call_id} {result.status}"]
    shown += ["    " + _cut(line) for line in lines[:SHOW_RESULT_LINES]]
    if len(lines) > SHOW_RESULT_LINES:
        shown.append(f"    … {counted(len(lines) - SHOW_RESULT_LINES, 'more line')}")
    return shown


def _cut(text: str) -> str:
    return text if len(text) <= SHOW_LINE_CHARS else text[: SHOW_LINE_CHARS - 1] + "…"


def _md_header(info: SessionInfo) -> list[str]:
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created_at))
    lines = [
        f"- Session: `{info.id}`",
        f"- Folder: `{info.cwd}`",
        f"- Model: `{info.model}`",
        f"- Created: {created}",
        f"- Tokens: {_tokens(info)}",
    ]
    if info.parent_id is not None:
        lines.append(f"- Forked from `{info.parent_id}` at message {info.fork_message_id}")
    return lines


def _md_item(item: MessageItem) -> list[str]:
    if isinstance(item, Text):
        return [item.text]
    if isinstance(item, Reasoning):
        return ["<details><summary>Reasoning</summary>", "", item.text, "", "</details>"]
    if isinstance(item, ToolCall):
        if item.raw_args is not None:
            head = f"**Tool call** `{item.name}` (`{item.id}`), arguments not valid JSON:"
            return [head, "", *_fenced(item.raw_args, "")]
        args = json.dumps(item.args, indent=2, ensure_ascii=False)
        return [f"**Tool call** `{item.name}` (`{item.id}`)", "", *_fenced(args, "json")]
    head = f"**Result** of `{item.tool_call_id}` ({item.status})"
    return [head, "", *_fenced(item.text, "")]


def _fenced(text: str, lang: str) -> list[str]:
    """A code block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]
