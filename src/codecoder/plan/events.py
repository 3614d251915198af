"""What a plan run reports, between the agent's own events (vocabulary, no logic).

`milestone` is always the milestone's name. `index` is the 0-based position of the
milestone in the plan, or in gate events, of the gate in its milestone's list. `turn` is
the session's turn the event belongs to: for `MilestoneStarted` the turn it begins (or,
with attempt 0, the last turn so far), otherwise the turn whose work was checked.

Order within a plan run: per attempt, one `MilestoneStarted`, the agent's events of that
turn up to its `Done`, then `GateStarted`/`GateFinished` pairs one after another; one
`MilestoneFinished` per milestone that started; `PlanFinished` last, exactly once.
"""

from __future__ import annotations

from typing import Literal

import msgspec

MilestoneStatus = Literal["passed", "failed", "cancelled"]
PlanStatus = Literal["passed", "failed", "cancelled"]


class MilestoneStarted(msgspec.Struct, frozen=True, tag="milestone_started", tag_field="type"):
    """An attempt begins: a turn of the agent follows. Attempt 0 (on `--continue`): the
    milestone passed in an earlier run and only its gates run again, no turn."""

    milestone: str
    index: int
    attempt: int
    turn: int


class GateStarted(msgspec.Struct, frozen=True, tag="gate_started", tag_field="type"):
    milestone: str
    index: int
    command: str
    turn: int


class GateFinished(msgspec.Struct, frozen=True, tag="gate_finished", tag_field="type"):
    """`exit_code`: the command's (128 + N when a signal N killed it); None when it did
    not end by itself (timed out or cancelled: it was killed) or could not start.
    `output_tail`: the last ~4 KB of its stdout and stderr."""

    milestone: str
    index: int
    command: str
    exit_code: int | None
    duration_ms: int
    output_tail: str
    turn: int


class MilestoneFinished(msgspec.Struct, frozen=True, tag="milestone_finished", tag_field="type"):
    """`attempts`: the turns it took in this run (0: passed earlier, its gates still pass)."""

    milestone: str
    status: MilestoneStatus
    attempts: int
    turn: int


class PlanFinished(msgspec.Struct, frozen=True, tag="plan_finished", tag_field="type"):
    """The last event of a plan run. `passed`: milestones passed of `total`."""

    status: PlanStatus
    passed: int
    total: int
    turn: int


PlanEvent = MilestoneStarted | GateStarted | GateFinished | MilestoneFinished | PlanFinished
