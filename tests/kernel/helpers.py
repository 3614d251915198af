"""Small real tools and a loop factory for kernel tests."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec

from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext
from codecoder.providers.scripted import ScriptedProvider
from codecoder.tools.base import TypedTool


class EchoArgs(msgspec.Struct):
    text: str
    times: int = 1


class Echo(TypedTool[EchoArgs]):
    name = "echo"
    description = "Repeat the text."
    risk: Risk = "read"
    args_type = EchoArgs

    def call(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        return tool_result(ctx.call_id, args.text * args.times)


class WaitArgs(msgspec.Struct):
    seconds: float


class Wait(TypedTool[WaitArgs]):
    """Blocks until cancelled or the time is up, like a well-behaved long tool."""

    name = "wait"
    description = "Wait."
    risk: Risk = "read"
    args_type = WaitArgs

    def call(self, args: WaitArgs, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        if ctx.cancel.wait(args.seconds):
            return tool_result(ctx.call_id, "interrupted", status="cancelled")
        return tool_result(ctx.call_id, f"waited {time.monotonic() - started:.2f}")


class Crash(TypedTool[EchoArgs]):
    name = "crash"
    description = "Always raises."
    risk: Risk = "read"
    args_type = EchoArgs

    def call(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        raise RuntimeError(args.text)


def make_loop(replies: list[Any], tmp_path: Path, **kwargs: Any) -> AgentLoop:
    provider = ScriptedProvider.from_replies(replies)
    tools = kwargs.pop("tools", [Echo(), Wait(), Crash()])
    return AgentLoop(provider, tools, tmp_path, **kwargs)
