"""Where hooks meet the agent (docs/hooks.md, "Events"), all of it edge code: the kernel
sees a tool, two gate ports and a tool source, and whatever a hook changes reaches the
loop through its journal (a tool's result and events, a gate's answer, a notice), so
`codecoder replay` runs no hook and still gets the same history and events.

- `HookedTool`: `pre_tool` just before the call runs (after the permission check, so it
  sees only calls that would run, and on the loop thread with the turn's CancelToken, so
  Ctrl+C kills it); exit 2 denies the call with the hook's reason, which the model reads.
  `post_tool` after it ran: its stdout is appended to the result the model reads; exit 2
  appends its reason and marks the result an error.
- `HookGates`: the kernel's PromptGate (`session_start` on the first turn of this run,
  then `user_prompt`: context joins the turn; a `user_prompt` block ends it) and StopGate
  (`stop`: exit 2 continues the turn with the reason as the next user message).
- `HookNotices`: a ToolSource (around the MCP servers' one, if any) whose notices are the
  hooks' warnings and the project hooks left out, shown before the next request.
- `CompactionGate`: `pre_compact`, asked by the compactor before it summarises; exit 2
  skips that compaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from codecoder.hooks.runner import HookRunner
from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.messages import Message, Text, ToolResult
from codecoder.kernel.ports import (
    PromptVerdict,
    Tool,
    ToolContext,
    ToolFailure,
    ToolSource,
)
from codecoder.tools.base import ToolWrapper

NO_TOOLS: tuple[Tool, ...] = ()


class HookedTool(ToolWrapper):
    """`tool` with the session's pre_tool and post_tool hooks around each call."""

    def __init__(self, tool: Tool, runner: HookRunner) -> None:
        super().__init__(tool)
        self.runner = runner

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        call = {"id": ctx.call_id, "name": self.name, "args": args}
        pre = self.runner.run("pre_tool", {"tool_call": call}, ctx.cancel, tool=self.name)
        _warn(ctx, pre.warnings)
        if pre.blocked is not None:
            raise ToolFailure("denied", f"blocked by a pre_tool hook: {pre.blocked}")
        result = self.tool.run(args, ctx)
        if not self.runner.hooks.of("post_tool", self.name):
            return result
        done = {"status": result.status, "content": result.text}
        post = self.runner.run(
            "post_tool", {"tool_call": call, "tool_result": done}, ctx.cancel, tool=self.name
        )
        _warn(ctx, post.warnings)
        if post.blocked is not None:
            note = Text(f"\n\n[post_tool hook] {post.blocked}")
            return msgspec.structs.replace(result, content=(*result.content, note), status="error")
        if post.context:
            note = Text(f"\n\n[post_tool hook] {post.context}")
            return msgspec.structs.replace(result, content=(*result.content, note))
        return result


def hooked(tools: Sequence[Tool], runner: HookRunner) -> list[Tool]:
    """The tools with hooks around them where a pre_tool or post_tool hook may apply."""
    if not (runner.has("pre_tool") or runner.has("post_tool")):
        return list(tools)
    return [HookedTool(tool, runner) for tool in tools]


def _warn(ctx: ToolContext, lines: list[str]) -> None:
    for line in lines:
        ctx.emit(StatusUpdate("running_tool", line, notice="hook"))


class HookGates:
    """The kernel's PromptGate and StopGate for a session's hooks. `resumed`: the
    session existed before this run (session_start says `resume`, else `startup`)."""

    def __init__(self, runner: HookRunner, *, resumed: bool) -> None:
        self.runner = runner
        self.resumed = resumed
        self._started = False
        self._continued_turn: int | None = None

    def prompt(self, view: Sequence[Message], cancel: CancelToken) -> PromptVerdict:
        contexts: list[str] = []
        if not self._started:
            self._started = True
            source = "resume" if self.resumed else "startup"
            started = self.runner.run("session_start", {"source": source}, cancel)
            self._note(started.warnings)
            if started.blocked is not None:  # session_start cannot block: said, then on
                self._note([f"a session_start hook exited 2 (it cannot block): {started.blocked}"])
            if started.context:
                contexts.append(_context("session_start", started.context))
        prompt = view[-1].text if view else ""
        asked = self.runner.run("user_prompt", {"prompt": prompt}, cancel)
        self._note(asked.warnings)
        if asked.context:
            contexts.append(_context("user_prompt", asked.context))
        blocked = (
            f"a user_prompt hook blocked the prompt: {asked.blocked}" if asked.blocked else None
        )
        return PromptVerdict(context="\n\n".join(contexts), blocked=blocked)

    def stop(self, view: Sequence[Message], cancel: CancelToken) -> str | None:
        turn = self.runner.turn()
        last = next((m.text for m in reversed(view) if m.role == "assistant"), "")
        payload = {"last_message": last, "stop_hook_active": self._continued_turn == turn}
        result = self.runner.run("stop", payload, cancel)
        self._note(result.warnings)
        if result.blocked is None:
            return None
        self._continued_turn = turn
        return result.blocked

    def _note(self, lines: list[str]) -> None:
        self.runner.warn(lines)


def _context(event: str, text: str) -> str:
    return f'<hook-context event="{event}">\n{text}\n</hook-context>'


class HookNotices:
    """A ToolSource whose tools are `inner`'s (none without one) and whose notices add
    the hooks' warnings, as `hook` status lines."""

    def __init__(self, runner: HookRunner, inner: ToolSource | None = None) -> None:
        self.runner = runner
        self.inner = inner

    def tools(self) -> Sequence[Tool]:
        return self.inner.tools() if self.inner is not None else NO_TOOLS

    def notices(self) -> Sequence[StatusUpdate]:
        found = list(self.inner.notices()) if self.inner is not None else []
        # The loop says them in the state it is in.
        found += [StatusUpdate("idle", line, "hook") for line in self.runner.take_notices()]
        return found


class CompactionGate:
    """The compactor's `before` gate: the pre_compact hooks, before a summary is made (on
    the compaction thread; a hook running then is killed at `close`, when the session
    ends, or at its timeout). A block skips that compaction, and the reason is a notice."""

    def __init__(self, runner: HookRunner) -> None:
        self.runner = runner
        self._stop = CancelToken()

    def __call__(self, trigger: str, tokens: int) -> str | None:
        payload = {"trigger": trigger, "tokens": tokens}
        try:
            result = self.runner.run("pre_compact", payload, self._stop)
        except Cancelled:
            return "the session is closing"
        self.runner.warn(result.warnings)
        if result.blocked is None:
            return None
        reason = f"a pre_compact hook skipped the compaction: {result.blocked}"
        self.runner.warn([reason])
        return reason

    def close(self) -> None:
        self._stop.cancel("closed")
