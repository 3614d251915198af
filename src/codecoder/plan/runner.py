"""PlanRunner: a plan's milestones in order, on a worker thread of their own (the seeds'
headless runner), each milestone one or more turns of one agent, checked by its gates.

The runner talks to the agent only as any client does: messages go in through the
command channel (`send`), and it reads the event channel to the turn's `Done`, passing
every event on. A face reads one stream from the runner: the agent's events, and the
runner's own (plan/events.py) between them. The kernel knows nothing of plans.

Gates run one after another (tools are serial within a turn, so verification is a chain,
never a fan-out), as the user's own commands: not through the model's permission policy,
but under the same process manager as the model's commands (their whole tree is killed on
cancel, their output capped, their environment scrubbed of secrets: a gate often runs
code the model wrote, and its output goes back to the model). The first gate that fails
ends the chain; its report is the next user message of the same milestone.

Cancel is one sticky token: flipping it cancels the agent's turn (and, checked again
right after each `send`, a turn sent as it flipped), and every gate runs under it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Literal, Protocol

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, Done, Error
from codecoder.kernel.handle import AgentClosed
from codecoder.plan.events import (
    GateFinished,
    GateStarted,
    MilestoneFinished,
    MilestoneStarted,
    MilestoneStatus,
    PlanEvent,
    PlanFinished,
    PlanStatus,
)
from codecoder.plan.feedback import (
    GateFailure,
    first_message,
    output_tail,
    reopened_message,
    retry_message,
)
from codecoder.plan.spec import Milestone, Plan

if TYPE_CHECKING:
    from codecoder.kernel.handle import AgentHandle
    from codecoder.kernel.trace import Tracer
    from codecoder.tools.process import CommandOutcome, ProcessManager


class AgentPort(Protocol):
    """What the runner needs of an agent: the client side every face holds (AgentHandle,
    the daemon's RemoteAgent)."""

    def send(self, text: str) -> None:
        """Start a turn with this user message (queued behind a running one)."""
        ...

    def cancel(self) -> None:
        """Cancel the running or queued turn; from any thread."""
        ...

    def next_event(self, timeout: float | None = None) -> object | None:
        """The next event; None once the agent has ended. Kernel events, and for a daemon
        session the client's own (daemon/remote_events.py), passed on as they are."""
        ...


class CommandRunner(Protocol):
    """What the runner needs to run a gate: ProcessManager.run (its sandbox, if any, too)."""

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        cancel: CancelToken,
        on_output: Callable[[str], object] | None = None,
        workspace: Path | None = None,
    ) -> CommandOutcome: ...


class ProgressSink(Protocol):
    """Where the runner records how far it got (plan/progress.py: the session store).
    Called on the runner's thread, before the matching event is put out."""

    def turn_started(self) -> None: ...

    def attempt_started(self, milestone: str, attempt: int) -> None: ...

    def milestone_finished(self, milestone: str, status: MilestoneStatus) -> None: ...

    def plan_finished(self, status: PlanStatus) -> None: ...


class NoProgress:
    """A ProgressSink that keeps nothing (tests, benchmarks, a throwaway run)."""

    def turn_started(self) -> None:
        return None

    def attempt_started(self, milestone: str, attempt: int) -> None:
        return None

    def milestone_finished(self, milestone: str, status: MilestoneStatus) -> None:
        return None

    def plan_finished(self, status: PlanStatus) -> None:
        return None


if TYPE_CHECKING:  # the real things satisfy the ports
    _agent: AgentPort = AgentHandle.__new__(AgentHandle)
    _commands: CommandRunner = ProcessManager()
    _progress: ProgressSink = NoProgress()

PlanStreamEvent = AgentEvent | PlanEvent
TRACE_NAME = "plan"
"""The `agent` of the runner's lines in a trace (`--trace FILE`)."""
_END = object()
_Cancelled = Literal["cancelled"]
_CANCELLED: _Cancelled = "cancelled"


class PlanRunner:
    """Runs `plan` with `agent` in `workspace`; `start()` it and read `next_event()`
    until None. `earlier` names the milestones an earlier run passed (`--continue`):
    their gates run again first, and only one that now fails is worked on."""

    def __init__(
        self,
        plan: Plan,
        agent: AgentPort,
        commands: CommandRunner,
        workspace: Path,
        *,
        progress: ProgressSink | None = None,
        first_turn: int = 0,
        earlier: Collection[str] = (),
        tracer: Tracer | None = None,
    ) -> None:
        self.plan = plan
        self.workspace = workspace
        self._agent = agent
        self._commands = commands
        self._progress = progress or NoProgress()
        self._earlier = frozenset(earlier)
        self._tracer = tracer
        self._turn = first_turn
        self._token = CancelToken()
        self._out: SimpleQueue[object] = SimpleQueue()
        self._ended = False
        self._open: tuple[str, int] | None = None
        """The milestone started and not finished, and its attempts so far."""
        self._thread = threading.Thread(target=self._run, name="plan-runner", daemon=True)
        self.status: PlanStatus | None = None
        """How the plan ended, once PlanFinished is out."""
        self.crash: BaseException | None = None
        """What broke the runner, if something did (it then ends the plan as failed)."""

    # --- the client side ---------------------------------------------------------------

    def start(self) -> None:
        self._token.on_cancel(self._cancel_agent)
        self._thread.start()

    def cancel(self) -> None:
        """Stop the plan at once, from any thread: the running turn is cancelled, a
        running gate's tree killed, and nothing further starts."""
        self._token.cancel()

    def _cancel_agent(self) -> None:
        with contextlib.suppress(AgentClosed):  # it has ended: nothing runs
            self._agent.cancel()

    @property
    def cancelled(self) -> bool:
        return self._token.is_cancelled()

    def next_event(self, timeout: float | None = None) -> PlanStreamEvent | None:
        """The next event; None once the plan has finished. Raises TimeoutError."""
        if self._ended:
            return None
        try:
            item = self._out.get(timeout=timeout)
        except Empty:
            raise TimeoutError(f"no event within {timeout} s") from None
        if item is _END:
            self._ended = True
            return None
        return item  # type: ignore[return-value]

    def events(self) -> Iterator[PlanStreamEvent]:
        while (event := self.next_event()) is not None:
            yield event

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join(timeout)

    def statistics(self) -> dict[str, int]:
        return {"queued_events": self._out.qsize(), "turn": self._turn}

    # --- the worker thread ---------------------------------------------------------------

    def _run(self) -> None:
        status: PlanStatus = "failed"
        passed = 0
        try:
            for index, milestone in enumerate(self.plan.milestones):
                if self.cancelled:  # before it starts: nothing of it to report
                    status = "cancelled"
                    break
                outcome = self._milestone(index, milestone)
                if outcome != "passed":
                    status = outcome
                    break
                passed += 1
            else:
                status = "passed"
        except Exception as exc:  # a worker's exception is a value: an Error, a failed plan
            self.crash = exc
            status = "cancelled" if self.cancelled else "failed"
            if status == "failed":
                self._emit(Error(kind=_kind(exc), message=_message(exc)))
            if self._open is not None:  # its MilestoneFinished, unrecorded (the store may be why)
                name, attempts = self._open
                self._emit(MilestoneFinished(name, status, attempts, self._turn))
        finally:
            self._finish(status, passed)

    def _finish(self, status: PlanStatus, passed: int) -> None:
        try:
            self._progress.plan_finished(status)
        except Exception as exc:
            if self.crash is None:
                self.crash = exc
                self._emit(Error(kind=_kind(exc), message=_message(exc)))
            status = "cancelled" if status == "cancelled" else "failed"
        finally:
            self.status = status
            self._emit(PlanFinished(status, passed, len(self.plan.milestones), self._turn))
            self._out.put(_END)

    def _emit(self, event: PlanEvent | Error) -> None:
        """Put out an event of the runner's own (the agent's loop traces its own events):
        traced as agent "plan", numbered in the same step as it is put out."""
        if self._tracer is not None:
            self._tracer.line("event", TRACE_NAME, self._turn, event, self._out.put)
        else:
            self._out.put(event)

    def _milestone(self, index: int, milestone: Milestone) -> MilestoneStatus:
        failure: GateFailure | None = None
        if milestone.name in self._earlier:
            self._open = (milestone.name, 0)
            self._emit(MilestoneStarted(milestone.name, index, 0, self._turn))
            checked = self._gates(milestone)
            if checked is None:
                return self._finished(milestone, "passed", 0)
            if checked == _CANCELLED:
                return self._finished(milestone, "cancelled", 0)
            failure = checked
        attempts = 0
        while attempts < self.plan.max_attempts:
            if self.cancelled and (attempts or failure is not None):  # it has started
                return self._finished(milestone, "cancelled", attempts)
            attempts += 1
            self._open = (milestone.name, attempts)
            text = self._message(index, milestone, attempts, failure)
            self._progress.attempt_started(milestone.name, attempts)
            self._emit(MilestoneStarted(milestone.name, index, attempts, self._turn + 1))
            done = self._agent_turn(text)
            if done.cancelled:
                return self._finished(milestone, "cancelled", attempts)
            if done.reason == "error":  # the agent could not go on: retrying would not help
                return self._finished(milestone, "failed", attempts)
            checked = self._gates(milestone)
            if checked is None:
                return self._finished(milestone, "passed", attempts)
            if checked == _CANCELLED:
                return self._finished(milestone, "cancelled", attempts)
            failure = checked
        return self._finished(milestone, "failed", attempts)

    def _message(
        self, index: int, milestone: Milestone, attempt: int, failure: GateFailure | None
    ) -> str:
        if failure is None:
            return first_message(self.plan, index, milestone)
        if attempt == 1:  # passed in an earlier run, failing now
            return reopened_message(self.plan, index, milestone, failure)
        return retry_message(self.plan, milestone, attempt, failure)

    def _finished(
        self, milestone: Milestone, status: MilestoneStatus, attempts: int
    ) -> MilestoneStatus:
        self._progress.milestone_finished(milestone.name, status)
        self._open = None
        self._emit(MilestoneFinished(milestone.name, status, attempts, self._turn))
        return status

    def _agent_turn(self, text: str) -> Done:
        """One turn: send, pass every event on, return its Done."""
        self._progress.turn_started()
        self._turn += 1
        try:
            self._agent.send(text)
        except AgentClosed:
            if self.cancelled:  # the face shut the agent down while cancelling
                return Done(cancelled=True, reason="shutdown")
            raise
        if self.cancelled:  # a cancel that came before the turn existed: cancel it now
            self._cancel_agent()
        while True:
            event = self._agent.next_event()
            if event is None:
                if self.cancelled:
                    return Done(cancelled=True, reason="shutdown")
                raise RuntimeError("the agent stopped before its turn ended")
            self._out.put(event)
            if isinstance(event, Done):
                return event

    def _gates(self, milestone: Milestone) -> GateFailure | _Cancelled | None:
        """Run the milestone's gates in order; the first failure, or None when all pass."""
        for index, command in enumerate(milestone.gates):
            if self.cancelled:
                return _CANCELLED
            self._emit(GateStarted(milestone.name, index, command, self._turn))
            started = time.monotonic()
            failure, exit_code, tail = self._gate(index, command)
            duration_ms = round((time.monotonic() - started) * 1000)
            self._emit(
                GateFinished(
                    milestone.name, index, command, exit_code, duration_ms, tail, self._turn
                )
            )
            if failure is not None:
                return failure
        return None

    def _gate(
        self, index: int, command: str
    ) -> tuple[GateFailure | _Cancelled | None, int | None, str]:
        """Run one gate: (its failure or None or cancelled, its exit code, its output tail)."""
        timeout = self.plan.gate_timeout
        try:
            outcome = self._commands.run(
                command,
                cwd=self.workspace,
                timeout=timeout,
                cancel=self._token,
                workspace=self.workspace,
            )
        except OSError as exc:
            why = exc.strerror or str(exc)
            failure = GateFailure(index, command, "unstarted", None, "", False, why)
            return failure, None, f"could not start: {why}"
        tail, cut = output_tail(outcome.output)
        if outcome.ended in ("cancelled", "killed"):
            return _CANCELLED, None, tail
        if outcome.ended == "timeout":
            failure = GateFailure(index, command, "timeout", None, tail, cut, f"{timeout:g}")
            return failure, None, tail
        code = outcome.returncode if outcome.returncode is not None else -1
        exit_code = 128 - code if code < 0 else code
        if exit_code == 0:
            return None, 0, tail
        ended = "signal" if code < 0 else "exited"
        return GateFailure(index, command, ended, exit_code, tail, cut), exit_code, tail


def _kind(exc: BaseException) -> str:
    from codecoder.sessions.errors import SessionError

    return "store" if isinstance(exc, SessionError) else "internal"


def _message(exc: BaseException) -> str:
    from codecoder.sessions.errors import SessionError

    if isinstance(exc, SessionError):
        return str(exc)
    return f"internal error in the plan runner: {exc!r}"
