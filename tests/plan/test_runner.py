"""PlanRunner in process: a real AgentLoop on the scripted provider, real gate processes
under a real ProcessManager, and the event stream a face reads."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

import pytest

from codecoder.kernel.events import Done, Error
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.plan.events import (
    GateFinished,
    GateStarted,
    MilestoneFinished,
    MilestoneStarted,
    PlanFinished,
)
from codecoder.plan.progress import StoreProgress, begin_run
from codecoder.plan.runner import (
    AgentPort,
    NoProgress,
    PlanRunner,
    PlanStreamEvent,
    ProgressSink,
)
from codecoder.plan.spec import Plan, parse_plan
from codecoder.providers.scripted import ScriptedProvider
from codecoder.sessions import SessionStore
from codecoder.tools.files import WriteFile
from codecoder.tools.process import ProcessManager

StartAgent = Callable[[AgentLoop], AgentHandle]

if TYPE_CHECKING:  # every face's client side can drive a plan
    from codecoder.daemon.client import RemoteAgent

    _local: AgentPort = AgentHandle.__new__(AgentHandle)
    _remote: AgentPort = RemoteAgent.__new__(RemoteAgent)
PLAN_EVENTS = (MilestoneStarted, GateStarted, GateFinished, MilestoneFinished, PlanFinished)


@pytest.fixture
def manager() -> Iterator[ProcessManager]:
    made = ProcessManager(grace=0.5)
    yield made
    made.close()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def plan_of(text: str) -> Plan:
    return parse_plan(text.encode(), "PLAN.toml")


def write(path: str, content: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "write_file", "args": {"path": path, "content": content}}


class Run:
    def __init__(self, loop: AgentLoop, runner: PlanRunner, events: list[PlanStreamEvent]):
        self.loop = loop
        self.runner = runner
        self.events = events

    @property
    def plan_events(self) -> list[PlanStreamEvent]:
        return [e for e in self.events if isinstance(e, PLAN_EVENTS)]

    def user_messages(self) -> list[str]:
        return [m.text for m in self.loop.messages if m.role == "user"]


def run_plan(
    plan: Plan,
    replies: list[Any],
    ws: Path,
    manager: ProcessManager,
    start_agent: StartAgent,
    *,
    earlier: tuple[str, ...] = (),
    progress: ProgressSink | None = None,
    on_event: Callable[[PlanStreamEvent, PlanRunner], None] | None = None,
    max_rounds: int = 100,
    first_turn: int = 0,
) -> Run:
    provider = ScriptedProvider.from_replies(replies)
    loop = AgentLoop(provider, [WriteFile()], ws, max_rounds=max_rounds, first_turn=first_turn)
    handle = start_agent(loop)
    runner = PlanRunner(
        plan, handle, manager, ws, earlier=earlier, progress=progress, first_turn=first_turn
    )
    runner.start()
    events: list[PlanStreamEvent] = []
    while (event := runner.next_event(timeout=30)) is not None:
        events.append(event)
        if on_event is not None:
            on_event(event, runner)
    runner.join(timeout=10)
    check_order(events)
    return Run(loop, runner, events)


def check_order(events: list[PlanStreamEvent]) -> None:
    """The stream's shape (plan/events.py): PlanFinished last and once; each started
    milestone finished once, after its attempts; a turn's events up to its Done right after
    its MilestoneStarted; each GateStarted followed at once by its GateFinished."""
    assert isinstance(events[-1], PlanFinished)
    assert sum(isinstance(e, PlanFinished) for e in events) == 1
    started = [e.milestone for e in events if isinstance(e, MilestoneStarted)]
    finished = [e.milestone for e in events if isinstance(e, MilestoneFinished)]
    assert finished == list(dict.fromkeys(started))
    in_turn = False
    for index, event in enumerate(events):
        if isinstance(event, MilestoneStarted):
            assert not in_turn
            in_turn = event.attempt > 0
        elif isinstance(event, Done):
            assert in_turn
            in_turn = False
        elif isinstance(event, PLAN_EVENTS):
            assert not in_turn, f"{event} inside a turn"
        if isinstance(event, GateStarted):
            after = events[index + 1]
            assert isinstance(after, GateFinished) and after.index == event.index


def kinds(run: Run) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for event in run.plan_events:
        match event:
            case MilestoneStarted():
                out.append(("started", event.milestone, event.attempt, event.turn))
            case GateStarted():
                out.append(("gate", event.milestone, event.index))
            case GateFinished():
                out.append(("gate_done", event.milestone, event.index, event.exit_code))
            case MilestoneFinished():
                out.append(("finished", event.milestone, event.status, event.attempts))
            case PlanFinished():
                out.append(("plan", event.status, event.passed, event.total))
    return out


FIX_ONCE = """
max_attempts = 3
[[milestones]]
name = "fix"
task = "Make a.txt say fixed."
gates = [
    "test -f a.txt",
    "grep -q fixed a.txt || { echo \\"MARK a.txt says $(cat a.txt)\\"; exit 3; }",
]
[[milestones]]
name = "after"
task = "Say done."
"""


def test_a_failed_gate_goes_back_to_the_model_and_its_fix_passes(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    replies = [[write("a.txt", "broken")], ["Wrote it."], [write("a.txt", "fixed")], ["Fixed."]]
    replies.append(["Done."])
    run = run_plan(plan_of(FIX_ONCE), replies, ws, manager, start_agent)
    assert kinds(run) == [
        ("started", "fix", 1, 1),
        ("gate", "fix", 0),
        ("gate_done", "fix", 0, 0),
        ("gate", "fix", 1),
        ("gate_done", "fix", 1, 3),
        ("started", "fix", 2, 2),
        ("gate", "fix", 0),
        ("gate_done", "fix", 0, 0),
        ("gate", "fix", 1),
        ("gate_done", "fix", 1, 0),
        ("finished", "fix", "passed", 2),
        ("started", "after", 1, 3),
        ("finished", "after", "passed", 1),
        ("plan", "passed", 2, 2),
    ]
    failed = [e for e in run.events if isinstance(e, GateFinished) and e.exit_code == 3]
    assert failed[0].output_tail == "MARK a.txt says broken\n"
    first, retry, after = run.user_messages()
    assert first.startswith("Milestone 1 of 2: fix\n\nMake a.txt say fixed.")
    assert "- `test -f a.txt`" in first
    assert "this is attempt 2 of 3" in retry
    assert "exited with code 3 (the gates before it passed)" in retry
    assert "MARK a.txt says broken" in retry  # the gate's output reached the model
    assert after.startswith("Milestone 2 of 2: after")
    assert run.runner.status == "passed"


NEVER = """
max_attempts = 2
[[milestones]]
name = "never"
task = "Try."
gates = ["echo nope; false", "touch second-gate-ran"]
[[milestones]]
name = "later"
task = "Never asked."
gates = ["true"]
"""


def test_a_gate_that_never_passes_fails_the_plan_after_max_attempts(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    run = run_plan(plan_of(NEVER), [["one"], ["two"]], ws, manager, start_agent)
    assert kinds(run) == [
        ("started", "never", 1, 1),
        ("gate", "never", 0),
        ("gate_done", "never", 0, 1),
        ("started", "never", 2, 2),
        ("gate", "never", 0),
        ("gate_done", "never", 0, 1),
        ("finished", "never", "failed", 2),
        ("plan", "failed", 0, 2),
    ]
    assert not (ws / "second-gate-ran").exists()  # the first failure ends the chain
    assert len(run.user_messages()) == 2  # "later" never started
    assert run.runner.status == "failed"


def test_a_turn_that_ends_in_an_error_fails_its_milestone_at_once(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of('[[milestones]]\nname = "m"\ntask = "t"\ngates = ["touch gate-ran"]\n')
    run = run_plan(plan, [[{"type": "error", "kind": "auth"}]], ws, manager, start_agent)
    assert kinds(run) == [
        ("started", "m", 1, 1),
        ("finished", "m", "failed", 1),
        ("plan", "failed", 0, 1),
    ]
    assert any(isinstance(e, Error) and e.kind == "auth" for e in run.events)
    assert not (ws / "gate-ran").exists()


def test_a_turn_stopped_by_the_round_limit_is_still_checked(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of('[[milestones]]\nname = "m"\ntask = "t"\ngates = ["test -f a.txt"]\n')
    run = run_plan(plan, [[write("a.txt", "x")]], ws, manager, start_agent, max_rounds=1)
    assert any(isinstance(e, Done) and e.reason == "max_rounds" for e in run.events)
    assert kinds(run)[-2:] == [("finished", "m", "passed", 1), ("plan", "passed", 1, 1)]


def test_milestones_that_passed_earlier_are_checked_again_without_a_turn(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    (ws / "one.txt").write_text("ok")
    plan = plan_of(
        '[[milestones]]\nname = "one"\ntask = "t1"\ngates = ["test -f one.txt"]\n'
        '[[milestones]]\nname = "two"\ntask = "t2"\ngates = ["test -f two.txt"]\n'
        '[[milestones]]\nname = "three"\ntask = "t3"\n'
    )
    replies = [[write("two.txt", "x")], ["two done"], ["three done"]]
    run = run_plan(plan, replies, ws, manager, start_agent, earlier=("one",), first_turn=4)
    assert kinds(run) == [
        ("started", "one", 0, 4),
        ("gate", "one", 0),
        ("gate_done", "one", 0, 0),
        ("finished", "one", "passed", 0),
        ("started", "two", 1, 5),
        ("gate", "two", 0),
        ("gate_done", "two", 0, 0),
        ("finished", "two", "passed", 1),
        ("started", "three", 1, 6),
        ("finished", "three", "passed", 1),
        ("plan", "passed", 3, 3),
    ]


def test_an_earlier_milestone_whose_gate_now_fails_is_worked_on_again(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of('[[milestones]]\nname = "one"\ntask = "t1"\ngates = ["test -f one.txt"]\n')
    run = run_plan(
        plan, [[write("one.txt", "x")], ["again"]], ws, manager, start_agent, earlier=("one",)
    )
    assert [k[:3] for k in kinds(run)] == [
        ("started", "one", 0),
        ("gate", "one", 0),
        ("gate_done", "one", 0),
        ("started", "one", 1),
        ("gate", "one", 0),
        ("gate_done", "one", 0),
        ("finished", "one", "passed"),
        ("plan", "passed", 1),
    ]
    (message,) = run.user_messages()
    assert message.startswith("Milestone 1 of 1: one\n\nt1")
    assert "passed in an earlier run, but its checks fail now" in message
    assert "`test -f one.txt`, exited with code 1" in message


def cancel_on(kind: type, **fields: Any) -> Callable[[PlanStreamEvent, PlanRunner], None]:
    def check(event: PlanStreamEvent, runner: PlanRunner) -> None:
        if isinstance(event, kind) and all(getattr(event, k) == v for k, v in fields.items()):
            runner.cancel()

    return check


def test_cancel_during_a_turn_stops_the_plan_at_once(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of('[[milestones]]\nname = "m"\ntask = "t"\ngates = ["touch gate-ran"]\n')
    started = time.monotonic()
    run = run_plan(
        plan,
        [[{"type": "sleep", "seconds": 60}]],
        ws,
        manager,
        start_agent,
        on_event=cancel_on(MilestoneStarted),
    )
    assert time.monotonic() - started < 5
    done = [e for e in run.events if isinstance(e, Done)]
    assert [d.reason for d in done] == ["cancelled"]
    assert kinds(run)[-2:] == [("finished", "m", "cancelled", 1), ("plan", "cancelled", 0, 1)]
    assert not (ws / "gate-ran").exists()


def test_cancel_during_a_gate_kills_it_and_starts_nothing_more(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of(
        '[[milestones]]\nname = "m"\ntask = "t"\ngates = ["sleep 60", "touch next-gate"]\n'
        '[[milestones]]\nname = "n"\ntask = "t"\n'
    )
    started = time.monotonic()
    run = run_plan(
        plan, [["done"]], ws, manager, start_agent, on_event=cancel_on(GateStarted, index=0)
    )
    assert time.monotonic() - started < 5
    assert kinds(run)[-4:] == [
        ("gate", "m", 0),
        ("gate_done", "m", 0, None),
        ("finished", "m", "cancelled", 1),
        ("plan", "cancelled", 0, 2),
    ]
    assert not (ws / "next-gate").exists()
    assert manager.running() == 0


def test_a_plan_cancelled_before_it_starts_runs_no_turn(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of('[[milestones]]\nname = "m"\ntask = "t"\n')
    loop = AgentLoop(ScriptedProvider.from_replies([["never"]]), [], ws)
    runner = PlanRunner(plan, start_agent(loop), manager, ws)
    runner.cancel()
    runner.start()
    events = list(runner.events())
    runner.join()
    assert events == [PlanFinished("cancelled", 0, 1, 0)]


class BrokenStore(NoProgress):
    def milestone_finished(self, milestone: str, status: str) -> None:  # type: ignore[override]
        raise RuntimeError("disk on fire")


def test_a_crash_of_the_runner_is_an_error_event_and_a_failed_plan(
    ws: Path, manager: ProcessManager, start_agent: StartAgent
) -> None:
    plan = plan_of('[[milestones]]\nname = "m"\ntask = "t"\n')
    run = run_plan(plan, [["ok"]], ws, manager, start_agent, progress=BrokenStore())
    errors = [e for e in run.events if isinstance(e, Error)]
    assert [e.kind for e in errors] == ["internal"]
    assert "disk on fire" in errors[0].message
    assert kinds(run)[-2:] == [("finished", "m", "failed", 1), ("plan", "failed", 0, 1)]
    assert isinstance(run.runner.crash, RuntimeError)


def test_progress_goes_to_the_store_as_it_happens(
    ws: Path, manager: ProcessManager, start_agent: StartAgent, tmp_path: Path
) -> None:
    plan = plan_of(NEVER)
    with SessionStore(tmp_path / "s.sqlite3") as store:
        session = store.create(ws, "scripted")
        run_id = begin_run(store, session, ws, plan)
        run_plan(
            plan,
            [["one"], ["two"]],
            ws,
            manager,
            start_agent,
            progress=StoreProgress(store, run_id),
        )
        found = store.latest_plan_run(ws, plan.path)
        assert found is not None and found.status == "failed"
        assert [(m.name, m.status, m.attempts) for m in found.milestones] == [
            ("never", "failed", 2),
            ("later", "pending", 0),
        ]


def test_the_runner_talks_to_the_agent_only_through_its_handle() -> None:
    """The kernel knows nothing of plans (invariant 7 and the issue's item 7)."""
    import codecoder.kernel

    kernel = Path(codecoder.kernel.__file__).parent
    for path in kernel.glob("*.py"):
        assert "codecoder.plan" not in path.read_text(), path.name


class RecordingAgent:
    """An AgentPort that notes each call; a turn ends only when it is cancelled."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._events: SimpleQueue[Done] = SimpleQueue()

    def send(self, text: str) -> None:
        self.calls.append("send")

    def cancel(self) -> None:
        self.calls.append("cancel")
        if "send" in self.calls:
            self._events.put(Done(cancelled=True, reason="cancelled"))

    def next_event(self, timeout: float | None = None) -> Done | None:
        return self._events.get(timeout=timeout)


class CancelAtTurn(NoProgress):
    """Cancels the plan right before the runner sends a turn: the cancel reaches an agent
    with nothing to cancel yet."""

    def __init__(self) -> None:
        self.runner: PlanRunner | None = None

    def turn_started(self) -> None:
        assert self.runner is not None
        self.runner.cancel()


def test_a_cancel_that_races_a_send_still_cancels_that_turn(
    ws: Path, manager: ProcessManager
) -> None:
    agent = RecordingAgent()
    progress = CancelAtTurn()
    plan = plan_of('[[milestones]]\nname = "m"\ntask = "t"\ngates = ["touch gate-ran"]\n')
    runner = PlanRunner(plan, agent, manager, ws, progress=progress)
    progress.runner = runner
    runner.start()
    events = [event for event in iter(lambda: runner.next_event(timeout=10), None)]
    runner.join()
    assert agent.calls == ["cancel", "send", "cancel"]
    assert events[-2:] == [
        MilestoneFinished("m", "cancelled", 1, 1),
        PlanFinished("cancelled", 0, 1, 1),
    ]
    assert not (ws / "gate-ran").exists()
