"""`ask_user`: the model asks the user a question and waits for the answer.

The question travels as an AskUser event carrying a reply oneshot (seed §3.8); the
answer comes back through that oneshot, never through the command channel. A cancel
while waiting ends the wait at once (ctx.ask_user raises Cancelled). In a run that
cannot ask (`--approval never-ask`) the tool is not offered and a call is denied
(permissions.modes / chain).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext
from codecoder.tools.base import TypedTool

ASK_USER = "ask_user"
MAX_OPTIONS = 20


class AskUserArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Arguments of ask_user."""

    question: Annotated[
        str, msgspec.Meta(pattern=r"\S", description="The question, complete and specific.")
    ]
    options: Annotated[
        list[str],
        msgspec.Meta(
            max_length=MAX_OPTIONS,
            description="Choices to offer, if the answer is one of a few; the user may "
            "still answer in their own words.",
        ),
    ] = []


class AskUserTool(TypedTool[AskUserArgs]):
    name = ASK_USER
    description = (
        "Ask the user a question and wait for the answer. Use it when the task is "
        "ambiguous in a way that changes what you would do, or before a choice that is "
        "hard to undo; do not use it for things you can find out yourself."
    )
    risk: Risk = "read"
    args_type = AskUserArgs

    def call(self, args: AskUserArgs, ctx: ToolContext) -> ToolResult:
        answer = ctx.ask_user(args.question, tuple(args.options))
        if not answer.strip():
            return tool_result(ctx.call_id, "(the user gave no answer)")
        return tool_result(ctx.call_id, answer)
