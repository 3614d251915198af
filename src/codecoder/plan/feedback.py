"""What the model is told: a milestone's first message, and a failed gate's report as the
next user message of the same milestone (pure functions of the plan and the outcome)."""

from __future__ import annotations

import re
import signal
from typing import Literal

import msgspec

from codecoder.plan.spec import Milestone, Plan

TAIL_BYTES = 4096
"""How much of a gate's output (its end) goes into `gate_finished` and to the model."""

GateEnd = Literal["exited", "signal", "timeout", "unstarted"]


class GateFailure(msgspec.Struct, frozen=True):
    """The first gate of a milestone that did not pass."""

    index: int
    """0-based position of the gate in its milestone's list."""
    command: str
    ended: GateEnd
    exit_code: int | None
    """The exit code; 128 + N for signal N; None for a timeout or a gate that never ran."""
    tail: str
    cut: bool
    """Whether `tail` is only the end of the output."""
    detail: str = ""
    """For `timeout`: the limit in seconds; for `unstarted`: why."""


def output_tail(text: str, limit: int = TAIL_BYTES) -> tuple[str, bool]:
    """The end of `text` in at most `limit` UTF-8 bytes, from a line start when one is
    near; and whether anything was cut."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text, False
    tail = data[-limit:].decode("utf-8", errors="ignore")  # a split character is dropped
    newline = tail.find("\n")
    if 0 <= newline < limit // 4:
        tail = tail[newline + 1 :]
    return tail, True


def outcome_words(failure: GateFailure) -> str:
    """`exited with code 1`, `was killed by signal SIGKILL`, `timed out after 600 s …`."""
    match failure.ended:
        case "exited":
            return f"exited with code {failure.exit_code}"
        case "signal":
            number = (failure.exit_code or 128) - 128
            return f"was killed by signal {_signal_name(number)}"
        case "timeout":
            return f"timed out after {failure.detail} s and was killed"
        case "unstarted":
            return f"could not start: {failure.detail}"


def first_message(plan: Plan, index: int, milestone: Milestone) -> str:
    """The first user message of a milestone: where it stands in the plan, its task, and
    the checks that will decide it."""
    head = f"Milestone {index + 1} of {len(plan.milestones)}: {milestone.name}"
    if plan.title:
        head = f"Plan: {plan.title}\n{head}"
    parts = [head, milestone.task.strip()]
    if milestone.gates:
        listed = "\n".join(f"- `{gate}`" for gate in milestone.gates)
        parts.append(
            "When you end your turn, these checks run in the workspace, one after another; "
            f"the milestone is done when all of them exit with code 0:\n{listed}"
        )
    return "\n\n".join(parts)


def failure_report(milestone: Milestone, failure: GateFailure) -> str:
    """The failed gate: which one, how it ended, and the end of its output."""
    count = len(milestone.gates)
    before = " (the gates before it passed)" if failure.index else ""
    lines = [
        f"Gate {failure.index + 1} of {count}, `{failure.command}`, "
        f"{outcome_words(failure)}{before}."
    ]
    if failure.ended != "unstarted":
        if failure.tail.strip():
            what = (
                f"The last {TAIL_BYTES // 1024} KB of its output" if failure.cut else "Its output"
            )
            fence = _fence(failure.tail)
            body = failure.tail if failure.tail.endswith("\n") else failure.tail + "\n"
            lines.append(f"{what}:\n{fence}\n{body}{fence}")
        else:
            lines.append("It printed nothing.")
    return "\n\n".join(lines)


def retry_message(plan: Plan, milestone: Milestone, attempt: int, failure: GateFailure) -> str:
    """The next user message after a failed gate (attempt ≥ 2)."""
    return (
        f"The checks of milestone {milestone.name!r} did not pass; "
        f"this is attempt {attempt} of {plan.max_attempts}.\n\n"
        f"{failure_report(milestone, failure)}\n\n"
        "Fix what it reports. When you end your turn, the checks run again from the first."
    )


def reopened_message(plan: Plan, index: int, milestone: Milestone, failure: GateFailure) -> str:
    """The first message of a milestone that passed in an earlier run but whose gate now
    fails (`--continue`)."""
    return (
        f"{first_message(plan, index, milestone)}\n\n"
        "This milestone passed in an earlier run, but its checks fail now.\n\n"
        f"{failure_report(milestone, failure)}"
    )


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
