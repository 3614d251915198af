"""`codecoder exec --plan PLAN.toml`: a plan headless (docs/plans.md).

The face of plan.PlanRunner for `exec`: it reads the runner's one stream (the agent's
events and the plan's) on the main thread and writes it as `exec` does, JSON lines with
`--json`, else progress lines on stderr and each turn's answer on stdout. Signals and
questions are handled as in `exec` (cli/headless.py); a signal cancels the plan, which
cancels the running turn or kills the running gate's tree.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from codecoder.cli import jsonl
from codecoder.cli.headless import (
    UsageError,
    _progress,
    _Runner,
    _SignalWatcher,
    _workspace,
    wait_event,
)
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_SIGINT, EXIT_USAGE
from codecoder.kernel.events import AgentEvent, Done, Error
from codecoder.plan.events import (
    GateFinished,
    GateStarted,
    MilestoneFinished,
    MilestoneStarted,
    PlanEvent,
    PlanFinished,
)
from codecoder.sessions.errors import SessionError
from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from codecoder.app.wiring import AgentSetup
    from codecoder.cli.commands import ExecOptions
    from codecoder.plan.runner import PlanRunner
    from codecoder.plan.spec import Plan
    from codecoder.sessions.records import PlanRunInfo

_PLAN_EVENTS = (MilestoneStarted, GateStarted, GateFinished, MilestoneFinished, PlanFinished)
TAIL_LINES = 8
"""Lines of a failed gate's output shown on stderr (all of its tail goes to the model)."""


def run_plan(options: ExecOptions) -> int:
    from codecoder.app.wiring import WiringError, build_agent
    from codecoder.plan.spec import PlanError, load_plan

    assert options.plan is not None
    try:
        if options.agent.resume is not None:
            raise UsageError("--plan goes on with --continue (this workspace's last run of it)")
        plan = load_plan(options.plan)
        workspace = _workspace(options.agent.cwd)
        earlier = _earlier(plan, workspace) if options.agent.continue_ else None
        agent = options.agent
        if earlier is not None:  # the session of that run, wherever it is among the latest
            agent = msgspec.structs.replace(agent, continue_=False, resume=earlier.session_id)
        setup = build_agent(agent, workspace)
    except (UsageError, WiringError, PlanError) as exc:
        print(f"codecoder: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if earlier is not None and earlier.digest != plan.digest:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(earlier.updated_at))
        _progress(
            f"codecoder: warning: {options.plan} has changed since its run of {when}; "
            "milestones are matched by name"
        )
    face = _PlanFace(setup, plan, json_output=options.json, stdin_replies=options.stdin_replies)
    try:
        return face.run_plan(earlier)
    except SessionError as exc:  # the store failed: the run cannot be kept
        print(f"codecoder: {visible(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # the last line of defence, as in exec
        if setup.tracer is not None:
            import traceback

            setup.tracer.note("exec", setup.loop.turn, "traceback", traceback.format_exc())
        print(f"codecoder: internal error: {exc!r}", file=sys.stderr)
        if options.agent.trace:
            print(f"codecoder: details in {options.agent.trace}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        setup.close()


def _earlier(plan: Plan, workspace: Path) -> PlanRunInfo:
    from codecoder.plan.progress import earlier_run
    from codecoder.sessions import SessionStore

    try:
        with SessionStore() as store:
            found = earlier_run(store, workspace, plan)
    except SessionError as exc:
        raise UsageError(str(exc)) from exc
    if found is None:
        raise UsageError(f"no run of {plan.path} to continue in {workspace}")
    return found


class _PlanFace(_Runner):
    def __init__(
        self, setup: AgentSetup, plan: Plan, *, json_output: bool, stdin_replies: bool
    ) -> None:
        super().__init__(setup, json_output=json_output, stdin_replies=stdin_replies)
        self.plan = plan
        self.turn = setup.first_turn
        self.runner: PlanRunner | None = None
        self.finished: PlanFinished | None = None
        self.failed: MilestoneFinished | None = None
        self.last_done: Done | None = None
        self.gate_failure: GateFinished | None = None

    def run_plan(self, earlier: PlanRunInfo | None) -> int:
        from codecoder.plan.gates import gate_runner
        from codecoder.plan.progress import StoreProgress, begin_run
        from codecoder.plan.runner import TRACE_NAME, PlanRunner

        setup = self.setup
        assert setup.log is not None
        store = setup.log.store
        workspace = setup.loop.workspace
        run_id = begin_run(store, setup.session_id, workspace, self.plan, earlier)
        handle = setup.loop.start()
        self.handle = handle
        runner = PlanRunner(
            self.plan,
            handle,
            gate_runner(setup.manager, setup.sandbox),
            workspace,
            progress=StoreProgress(store, run_id, setup.log),
            first_turn=setup.first_turn,
            earlier=earlier.passed if earlier is not None else (),
            tracer=setup.tracer,
        )
        self.runner = runner
        if self.json:
            self._write(jsonl.encode(jsonl.SessionLine(jsonl.SCHEMA, setup.session_id)))
        signals = _SignalWatcher(self._on_signal, setup.kill_processes)
        try:
            runner.start()
            self._consume_plan(runner)
        finally:
            signals.close()
            if runner.status is None:  # we are leaving early: stop it first
                runner.cancel()
            handle.shutdown()
            runner.join()
            self._flush()
        if runner.crash is not None and setup.tracer is not None:
            import traceback

            detail = "".join(traceback.format_exception(runner.crash))
            setup.tracer.note(TRACE_NAME, self.turn, "traceback", detail)
        return self._plan_exit_code()

    def _cancel(self) -> None:
        if self.runner is not None:
            self.runner.cancel()
        else:
            super()._cancel()

    def _consume_plan(self, runner: PlanRunner) -> None:
        while True:
            try:
                event = runner.next_event(timeout=0)
            except TimeoutError:
                self._flush()  # nothing waiting: the consumer sees the stream live
                event = wait_event(runner.next_event)
            if event is None:
                return
            if isinstance(event, _PLAN_EVENTS):
                self._plan_event(event)
            else:
                self._agent_event(event)

    def _agent_event(self, event: AgentEvent) -> None:
        self._show(event)
        if isinstance(event, Done):
            self.last_done = event
            if not self.json and event.reason in ("completed", "max_rounds"):
                text = visible("".join(self.answer).strip())
                if text:
                    self._write(text.encode() + b"\n")
            self.answer.clear()
        elif isinstance(event, Error) and event.kind == "max_rounds" and not self.json:
            _progress(f"  the turn {event.message}; its work is checked all the same")

    def _plan_event(self, event: PlanEvent) -> None:
        self.turn = event.turn
        match event:
            case MilestoneStarted():
                self.failure = None
                self.gate_failure = None
                self.last_done = None
            case GateFinished(exit_code=0):
                pass
            case GateFinished():
                self.gate_failure = event
            case MilestoneFinished(status="failed"):
                self.failed = event
            case PlanFinished():
                self.finished = event
            case _:
                pass
        if self.json:
            self._write(jsonl.encode(jsonl.plan_line(event)))
            return
        self._flush()  # the answer so far before the progress line
        for line in self._describe(event):
            _progress(line)

    def _describe(self, event: PlanEvent) -> list[str]:
        total = len(self.plan.milestones)
        match event:
            case MilestoneStarted(milestone=name, index=index, attempt=0):
                return [f"● milestone {index + 1}/{total} {name}: checking the earlier run's work"]
            case MilestoneStarted(milestone=name, index=index, attempt=attempt):
                of = self.plan.max_attempts
                return [f"● milestone {index + 1}/{total} {name} (attempt {attempt} of {of})"]
            case GateStarted(milestone=name, index=index, command=command):
                count = self._gate_count(name)
                return [f"  gate {index + 1}/{count}: {command}"]
            case GateFinished():
                return _gate_lines(event, self.plan.gate_timeout)
            case MilestoneFinished(milestone=name, status=status, attempts=attempts):
                mark = {"passed": "✓", "failed": "✗", "cancelled": "⊘"}[status]
                return [f"{mark} {name} {status} ({_attempts(attempts)})"]
            case PlanFinished(status=status, passed=passed, total=total):
                return [f"plan {status}: {passed} of {total} milestones passed"]
        return []

    def _gate_count(self, milestone: str) -> int:
        for candidate in self.plan.milestones:
            if candidate.name == milestone:
                return len(candidate.gates)
        return 0

    def _plan_exit_code(self) -> int:
        if self.signal_exit is not None:
            return self.signal_exit
        if self.closed_pipe:
            return EXIT_FAILED
        finished = self.finished
        if finished is None:
            raise RuntimeError("the plan ended without plan_finished")
        if finished.status == "passed":
            return EXIT_OK
        if finished.status == "cancelled":
            return EXIT_SIGINT
        _progress(f"codecoder: {self._failure_line()}")
        if self.failure is not None and self.failure.kind == "config":
            return EXIT_USAGE
        return EXIT_FAILED

    def _failure_line(self) -> str:
        failure: Error | None = self.failure
        ended_in_error = self.last_done is not None and self.last_done.reason == "error"
        if failure is not None and (ended_in_error or failure.kind in ("store", "internal")):
            where = f"milestone {self.failed.milestone!r} failed: " if self.failed else ""
            return where + failure.message
        if self.failed is not None:
            attempts = _attempts(self.failed.attempts)
            line = f"milestone {self.failed.milestone!r} failed after {attempts}"
            gate = self.gate_failure
            if gate is not None:
                words = _gate_words(gate, self.plan.gate_timeout)
                line += f": gate {gate.index + 1}, `{gate.command}`, {words}"
            return line
        return "the plan failed"


def _attempts(count: int) -> str:
    if count == 0:
        return "passed in an earlier run"
    return f"{count} attempt{'' if count == 1 else 's'}"


def _gate_words(event: GateFinished, timeout: float) -> str:
    """How a gate ended, from its event: an exit code, else a timeout (it ran for the
    whole gate_timeout) or a gate that could not start (its tail says why)."""
    if event.exit_code is not None:
        return f"exited with code {event.exit_code}"
    if event.duration_ms >= timeout * 1000 * 0.99:
        return f"timed out after {timeout:g} s and was killed"
    return "could not start"


def _gate_lines(event: GateFinished, timeout: float) -> list[str]:
    ms = event.duration_ms
    took = f"{ms} ms" if ms < 10_000 else f"{ms / 1000:.0f} s"
    if event.exit_code == 0:
        return [f"    ✓ passed in {took}"]
    lines = [f"    ✗ {_gate_words(event, timeout)} after {took}"]
    tail = event.output_tail.rstrip("\n").splitlines()[-TAIL_LINES:]
    lines += [f"    │ {line}" for line in tail]
    return lines
