"""`/plan PLAN.toml` in the interactive client: a plan run (plan/runner.py, as `exec
--plan` runs it, docs/plans.md) with live progress, a checklist of milestones and gates.

Threads. The runner works on its own thread, as in `exec`. The client's pump thread goes
on reading the session's events, and the main thread shows them as for any turn and
hands each turn's end (its Done) to the runner, which is all the runner waits for; the
runner sends each milestone's message on the session's handle itself. A plan-pump
thread reads the runner's stream and posts the plan's events to the main thread, which
draws them. While the plan runs the client is busy ("plan"): what is typed waits until
the plan ends, and Ctrl+C cancels the plan (its turn, or its running gate's tree).

In-process sessions only: a daemon session's commands run in the daemon, in its sandbox,
and a plan's gates must run where they do.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING

from codecoder.cli.tui.backend import LocalBackend, Unavailable
from codecoder.cli.tui.text import safe_line
from codecoder.kernel.events import AgentEvent, Done, Error
from codecoder.plan.events import (
    GateFinished,
    GateStarted,
    MilestoneFinished,
    MilestoneStarted,
    PlanEvent,
    PlanFinished,
)

if TYPE_CHECKING:
    from codecoder.cli.tui.app import Client
    from codecoder.plan.runner import PlanRunner
    from codecoder.plan.spec import Plan

_SHOWN = (MilestoneStarted, GateStarted, GateFinished, MilestoneFinished, PlanFinished, Error)
MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "cancelled": ("⊘", "yellow")}
MESSAGE_LINES = 4
"""Lines of a milestone's message shown (the model gets all of it)."""
TAIL_LINES = 6
"""Lines of a failed gate's output shown (the model gets its last 4 KB)."""


def start_plan(client: Client, arguments: str) -> None:
    """The `/plan` command: read the file, record the run, start it."""
    from codecoder.plan.spec import PlanError, load_plan

    backend = client.backend
    if backend is None:
        return
    if not isinstance(backend, LocalBackend):
        raise Unavailable(
            "a plan's gates run where the session's commands run: start the client with "
            "--no-daemon to run a plan here, or use codecoder exec --plan"
        )
    if not arguments.strip():
        raise Unavailable("usage: /plan PLAN.toml (docs/plans.md)")
    given = arguments.strip()
    path = Path(given).expanduser()
    if not path.is_absolute():  # the workspace's, as @path is
        path = client.workspace / path
    try:
        plan = load_plan(path, source=given)
    except PlanError as exc:
        raise Unavailable(str(exc)) from None
    driver = PlanDriver(client, backend, plan)
    driver.start()


class _SessionAgent:
    """The runner's AgentPort over the client's session: it sends on the session's
    handle (and has the main thread show the message), and reads only the turns' ends,
    which the main thread hands over."""

    def __init__(self, driver: PlanDriver) -> None:
        self._driver = driver
        self.ends: SimpleQueue[AgentEvent | None] = SimpleQueue()

    def send(self, text: str) -> None:
        driver = self._driver
        driver.client._post(driver._sent, text)  # shown before the turn's first event
        driver.backend.handle.send(text)

    def cancel(self) -> None:
        self._driver.backend.handle.cancel()

    def next_event(self, timeout: float | None = None) -> AgentEvent | None:
        try:
            return self.ends.get(timeout=timeout)
        except Empty:
            raise TimeoutError(f"no event within {timeout} s") from None


class PlanDriver:
    def __init__(self, client: Client, backend: LocalBackend, plan: Plan) -> None:
        self.client = client
        self.backend = backend
        self.plan = plan
        self.agent = _SessionAgent(self)
        self.runner: PlanRunner | None = None
        self.states: dict[str, str] = {m.name: "○" for m in plan.milestones}
        self.attempts: dict[str, int] = {}
        self._thread: threading.Thread | None = None

    # --- the main thread -------------------------------------------------------------

    def start(self) -> None:
        from codecoder.plan.gates import gate_runner
        from codecoder.plan.progress import StoreProgress, begin_run
        from codecoder.plan.runner import PlanRunner

        setup = self.backend.setup
        assert setup.log is not None
        store = setup.log.store
        workspace = setup.loop.workspace
        run_id = begin_run(store, setup.session_id, workspace, self.plan)
        self.runner = PlanRunner(
            self.plan,
            self.agent,
            gate_runner(setup.manager, setup.sandbox),
            workspace,
            progress=StoreProgress(store, run_id, setup.log),
            first_turn=setup.loop.turn,
            tracer=setup.tracer,
        )
        client = self.client
        client.plan = self
        client.busy, client.busy_since = "plan", time.monotonic()
        self._checklist("▶ plan" + (f" {safe_line(self.plan.title)}" if self.plan.title else ""))
        self.runner.start()
        self._thread = threading.Thread(target=self._pump, name="tui-plan-pump", daemon=True)
        self._thread.start()

    def agent_event(self, event: AgentEvent | None) -> None:
        """Each event of the session, as the client shows it: a turn's end goes on to
        the runner (and the end of the session)."""
        if event is None or isinstance(event, Done):
            self.agent.ends.put(event)

    def cancel(self) -> None:
        if self.runner is not None:
            self.runner.cancel()

    def join(self, timeout: float | None = None) -> None:
        if self.runner is not None:
            self.runner.join(timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    def _sent(self, text: str) -> None:
        view = self.client.view
        lines = text.rstrip().split("\n")
        for line in lines[:MESSAGE_LINES]:
            view.line(f"  {safe_line(line)}", "dim")
        if len(lines) > MESSAGE_LINES:
            view.line(f"  … {len(lines) - MESSAGE_LINES} more lines to the model", "dim")
        view.line("")
        self.client._flush()

    def _show(self, event: PlanEvent | Error) -> None:
        view = self.client.view
        total = len(self.plan.milestones)
        match event:
            case MilestoneStarted(milestone=name, index=index, attempt=attempt):
                self.states[name] = "●"
                self.attempts[name] = attempt
                view.gap()
                of = self.plan.max_attempts
                view.line(
                    f"● milestone {index + 1}/{total} {safe_line(name)} "
                    f"(attempt {attempt} of {of})",
                    "bold",
                )
                view.status = f"Plan: {name}, attempt {attempt} of {of}"
            case GateStarted(milestone=name, index=index, command=command):
                count = self._gates(name)
                view.status = f"Gate {index + 1}/{count}: {command}"
            case GateFinished():
                self._gate_finished(event)
            case MilestoneFinished(milestone=name, status=status, attempts=attempts):
                mark, style = MARKS[status]
                self.states[name] = mark
                tries = f"{attempts} attempt{'' if attempts == 1 else 's'}"
                view.line(f"{mark} {safe_line(name)} {status} ({tries})", style, "bold")
            case PlanFinished(status=status, passed=passed, total=total):
                mark, style = MARKS[status]
                self._checklist(f"{mark} plan {status}: {passed} of {total} milestones passed")
                self._over()
            case Error(message=message):
                view.line(f"plan: {safe_line(message)}", "red")
        self.client._flush()

    def _gate_finished(self, event: GateFinished) -> None:
        view = self.client.view
        count = self._gates(event.milestone)
        ms = event.duration_ms
        took = f"{ms} ms" if ms < 10_000 else f"{ms // 1000} s"
        where = f"gate {event.index + 1}/{count} {safe_line(event.command)}"
        if event.exit_code == 0:
            view.line(f"  ✓ {where} · {took}", "green")
            return
        ended = f"exit {event.exit_code}" if event.exit_code is not None else "did not finish"
        view.line(f"  ✗ {where} · {ended} · {took}", "red")
        for line in event.output_tail.rstrip("\n").splitlines()[-TAIL_LINES:]:
            view.line(f"    │ {safe_line(line)}", "dim")

    def _checklist(self, title: str) -> None:
        view = self.client.view
        view.gap()
        view.line(title, "bold")
        for milestone in self.plan.milestones:
            gates = safe_line(", ".join(milestone.gates) or "no gates")
            mark = self.states[milestone.name]
            view.line(f"  {mark} {safe_line(milestone.name)} — {gates}", "dim")
        view.gap()
        self.client._flush()

    def _gates(self, name: str) -> int:
        for milestone in self.plan.milestones:
            if milestone.name == name:
                return len(milestone.gates)
        return 0

    def _over(self) -> None:
        client = self.client
        if client.plan is self:
            client.plan = None
        if client.busy == "plan":
            client.busy = ""
        client.view.status = ""
        client._flush()
        client._next()

    # --- the plan-pump thread -------------------------------------------------------------

    def _pump(self) -> None:
        """The runner's stream: the plan's events (and its own errors) to the main
        thread; the agent's events in it are the turns' ends, already shown."""
        runner = self.runner
        assert runner is not None
        for event in runner.events():
            if isinstance(event, _SHOWN):
                self.client._post(self._show, event)
