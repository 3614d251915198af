"""The loop has a call's arguments validated before the permission policy sees them:
the policy judges what will run (aliases renamed, values coerced), and a malformed call
is invalid_args that never reaches the policy (nor a person's question)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from codecoder.kernel.events import ConfirmRequest, ToolFinished, ToolStarted
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolCall, ToolResult, tool_result
from codecoder.kernel.ports import Decision, Risk, Tool, ToolContext
from codecoder.tools.base import TypedTool
from tests.invariants import check_turn
from tests.kernel.helpers import make_loop

Start = Callable[[AgentLoop], AgentHandle]
"""The `start_agent` fixture (tests/conftest.py)."""


class CopyArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    times: int = 1


class Copy(TypedTool[CopyArgs]):
    name = "copy"
    description = "Copy a path."
    risk: Risk = "write"
    args_type = CopyArgs
    aliases = {"file_path": "path"}

    def call(self, args: CopyArgs, ctx: ToolContext) -> ToolResult:
        return tool_result(ctx.call_id, f"{args.path} x{args.times}")


class Watching:
    """Allows every call and keeps what it was shown."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        self.seen.append(call.args)
        return Decision("ask" if call.args.get("path") == "ask.txt" else "allow")

    def remember(self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]) -> None:
        return None

    def forbid(self, tool: Tool, call: ToolCall) -> None:
        return None


def call(**args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": "copy", "args": args}


def test_the_policy_judges_the_arguments_the_tool_will_run_with(
    tmp_path: Path, start_agent: Start
) -> None:
    policy = Watching()
    replies = [[call(file_path="a.txt", times="3"), call(path="b.txt")], ["done"]]
    loop = make_loop(replies, tmp_path, tools=[Copy()], policy=policy)
    handle = start_agent(loop)
    handle.send("go")
    events = handle.wait_done(10)
    check_turn(events)
    assert policy.seen == [{"path": "a.txt", "times": 3}, {"path": "b.txt"}]
    results = [e.result.text for e in events if isinstance(e, ToolFinished) and e.result]
    assert results == ["a.txt x3", "b.txt x1"]
    # a client is shown the call as it runs (an editor reads `path` for its title and diff)
    started = [e.args for e in events if isinstance(e, ToolStarted)]
    assert started == [{"path": "a.txt", "times": 3}, {"path": "b.txt"}]
    # history keeps what the model sent: its next request shows its own call
    assert loop.messages[1].tool_calls[0].args == {"file_path": "a.txt", "times": "3"}


def test_a_malformed_call_is_invalid_args_before_any_question(
    tmp_path: Path, start_agent: Start
) -> None:
    policy = Watching()
    replies = [[call(path="ask.txt", tims=2), call(path=["ask.txt"])], ["done"]]
    loop = make_loop(replies, tmp_path, tools=[Copy()], policy=policy)
    handle = start_agent(loop)
    handle.send("go")
    events = handle.wait_done(10)
    check_turn(events)
    assert policy.seen == [] and not any(isinstance(e, ConfirmRequest) for e in events)
    errors = [e.error for e in events if isinstance(e, ToolFinished) and e.error]
    assert [error.kind for error in errors] == ["invalid_args", "invalid_args"]
    assert "unknown field `tims` (did you mean `times`?)" in errors[0].message
    assert "copy takes:\n  path: string (required)\n  times: integer (default 1)" in (
        errors[0].message
    )
    assert "expected `str`, got `array` (at `path`)" in errors[1].message
