"""A recorded session as a `codecoder-script/1` file (`codecoder sessions export ID
--as-script`), so that any real session becomes a regression test: `exec --script` plays
the model's side again, turn for turn.

The script is built from the record and the messages: each reply of the main agent (its
text, reasoning with its token, tool calls with their arguments, usage, a provider error)
in order; each compaction's summary as a `compaction` reply; each sub-agent's replies, cut
at its requests, as a `subagents` entry matching its task. What a script cannot say is
left out: the timing of tokens, a retry, a reply cut short by a cancel (it ends where the
cancel came). People's answers are not the model's side either: run the script with the
approval mode or `--stdin-replies` the session had.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from codecoder.kernel.events import (
    AgentEvent,
    NewReasoning,
    NewToken,
    StatusUpdate,
    Subagent,
    ToolStarted,
)
from codecoder.kernel.journal import (
    CallMark,
    CompactNow,
    Entry,
    Failed,
    Ready,
    ReasoningMark,
    Stream,
    ToolRan,
    Used,
)
from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall

FORMAT = "codecoder-script/1"


def script_from_record(entries: Sequence[Entry], messages: dict[int, Message]) -> dict[str, Any]:
    """The script of a record (the store's messages by id give the words)."""
    from codecoder.context.compaction import SUMMARY_HEADER

    replies: list[dict[str, Any]] = []
    compaction: list[dict[str, Any]] = []
    subagents: list[dict[str, Any]] = []
    tasks: dict[str, list[str]] = {}
    for entry in entries:
        if isinstance(entry, Stream):
            message = messages.get(entry.message) if entry.message else None
            replies.append({"parts": _reply_parts(entry, message)})
            for call in message.tool_calls if message is not None else ():
                if call.name == "agent":
                    tasks[call.id] = _tasks(call)
        elif isinstance(entry, Ready | CompactNow) and entry.view is not None:
            summary = entry.view.summary.text.removeprefix(SUMMARY_HEADER).strip()
            compaction.append({"parts": [{"type": "text", "text": summary}]})
        elif isinstance(entry, ToolRan) and entry.call in tasks:
            subagents += _children(entry.events, tasks[entry.call])
    script: dict[str, Any] = {"format": FORMAT, "replies": replies}
    if compaction:
        script["compaction"] = compaction
    if subagents:
        script["subagents"] = subagents
    return script


def _reply_parts(entry: Stream, message: Message | None) -> list[dict[str, Any]]:
    text = "".join(i.text for i in message.items if isinstance(i, Text)) if message else ""
    reasonings = [i for i in message.items if isinstance(i, Reasoning)] if message else []
    calls = {c.id: c for c in message.tool_calls} if message else {}
    parts: list[dict[str, Any]] = []
    at_text = at_reasoning = 0
    thinking = ""
    tokens = iter(r.token for r in reasonings if r.token is not None)
    reasoning_text = "".join(r.text for r in reasonings)
    for item in entry.items:
        if isinstance(item, int):
            _add_text(parts, text[at_text : at_text + item])
            at_text += item
        elif isinstance(item, list):
            thinking += reasoning_text[at_reasoning : at_reasoning + item[0]]
            at_reasoning += item[0]
        elif isinstance(item, ReasoningMark):
            token = next(tokens, None) if item.token else None
            parts.append({"type": "reasoning", "text": thinking, "token": token})
            thinking = ""
        elif isinstance(item, CallMark) and item.id in calls:
            parts.append(_call_part(calls[item.id]))
        elif isinstance(item, Used):
            usage = {"input_tokens": item.i, "output_tokens": item.o, "cached_tokens": item.c}
            parts.append({"type": "usage", **usage, "reasoning_tokens": item.r})
        elif isinstance(item, Failed):
            parts.append({"type": "error", "kind": item.kind, "message": item.message})
    if thinking:
        parts.append({"type": "reasoning", "text": thinking})
    return parts


def _add_text(parts: list[dict[str, Any]], text: str) -> None:
    if parts and parts[-1]["type"] == "text":
        parts[-1]["text"] += text
    elif text:
        parts.append({"type": "text", "text": text})


def _call_part(call: ToolCall) -> dict[str, Any]:
    if call.raw_args is not None:
        return {"type": "tool_call", "name": call.name, "raw_args": call.raw_args}
    return {"type": "tool_call", "name": call.name, "args": call.args}


def _tasks(call: ToolCall) -> list[str]:
    tasks = call.args.get("tasks")
    if not isinstance(tasks, list):
        return []
    return [str(t.get("task", "")) if isinstance(t, dict) else str(t) for t in tasks]


def _children(events: Iterable[object], tasks: list[str]) -> list[dict[str, Any]]:
    """One `subagents` entry per child, in the order they began (the order of the tasks),
    its replies cut at each of its requests."""
    replies: dict[str, list[list[dict[str, Any]]]] = {}
    for event in events:
        if not isinstance(event, Subagent):
            continue
        child = replies.setdefault(event.agent_id, [])
        _child_event(child, event.event)
    entries = []
    for task, child_replies in zip(tasks, replies.values(), strict=False):
        entries.append(
            {
                "match": f"^{re.escape(task)}$",
                "replies": [{"parts": parts} for parts in child_replies if parts],
            }
        )
    return entries


def _child_event(child: list[list[dict[str, Any]]], event: AgentEvent) -> None:
    if isinstance(event, StatusUpdate) and event.status == "thinking":
        child.append([])
    elif not child:
        return
    elif isinstance(event, NewToken):
        _add_text(child[-1], event.text)
    elif isinstance(event, NewReasoning):
        child[-1].append({"type": "reasoning", "text": event.text})
    elif isinstance(event, ToolStarted):
        child[-1].append({"type": "tool_call", "name": event.name, "args": event.args})
