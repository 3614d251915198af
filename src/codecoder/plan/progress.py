"""A plan run's progress in the session store, so `--continue` knows where to go on.

A run is identified by the workspace and the plan file's resolved path; continuing takes
that pair's latest run (its session too), keeps the run's id and matches milestones by
name, so a plan file edited between runs still finds what passed. The file's digest is
kept to say when it changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from codecoder.plan.events import MilestoneStatus, PlanStatus
from codecoder.plan.spec import Plan

if TYPE_CHECKING:
    from codecoder.sessions import SessionLog, SessionStore
    from codecoder.sessions.records import PlanRunInfo


class StoreProgress:
    """The ProgressSink of one plan run: every step one committed transaction, so a run
    killed at any instant is found as far as it got."""

    def __init__(self, store: SessionStore, run_id: str, log: SessionLog | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self._log = log

    def turn_started(self) -> None:
        if self._log is not None:
            self._log.begin_turn()

    def attempt_started(self, milestone: str, attempt: int) -> None:
        self.store.plan_attempt_started(self.run_id, milestone)

    def milestone_finished(self, milestone: str, status: MilestoneStatus) -> None:
        self.store.plan_milestone_finished(self.run_id, milestone, status)

    def plan_finished(self, status: PlanStatus) -> None:
        self.store.plan_run_finished(self.run_id, status)


def earlier_run(store: SessionStore, workspace: Path, plan: Plan) -> PlanRunInfo | None:
    """The run `--continue` goes on with: this plan file's latest in this workspace."""
    return store.latest_plan_run(workspace, plan.path)


def begin_run(
    store: SessionStore,
    session_id: str,
    workspace: Path,
    plan: Plan,
    earlier: PlanRunInfo | None = None,
) -> str:
    """Record the start of a run (a new one, or `earlier` going on); returns its id."""
    names = [milestone.name for milestone in plan.milestones]
    run_id = earlier.id if earlier is not None else None
    return store.start_plan_run(session_id, workspace, plan.path, plan.digest, names, run_id=run_id)


def changed_since(plan: Plan, earlier: PlanRunInfo) -> bool:
    return plan.digest != earlier.digest
