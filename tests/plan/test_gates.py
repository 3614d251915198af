"""Gates in the sandbox: the same mode as the model's commands, for real (bwrap), and a
sandbox that was asked for but cannot run makes a gate fail, never run unconfined."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from queue import SimpleQueue

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Done
from codecoder.plan.events import GateFinished, PlanFinished
from codecoder.plan.gates import ConfinedGates
from codecoder.plan.runner import PlanRunner
from codecoder.plan.spec import parse_plan
from codecoder.sandbox.probe import Probe
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from tests.sandbox.conftest import needs_bwrap

pytestmark = pytest.mark.timeout(60)


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


def gate(gates: ConfinedGates, command: str, ws: Path) -> tuple[int | None, str]:
    outcome = gates.run(command, cwd=ws, timeout=30, cancel=CancelToken(), workspace=ws)
    return outcome.returncode, outcome.output


@pytest.fixture
def outside() -> Iterator[Path]:
    """A place outside the workspace and outside /tmp (the sandbox's /tmp is private)."""
    path = Path("/var/tmp") / f"codecoder-gate-{uuid.uuid4().hex}"
    yield path
    path.unlink(missing_ok=True)


@needs_bwrap
def test_a_gate_runs_in_the_sandbox_mode_of_the_commands(
    manager: ProcessManager, ws: Path, outside: Path
) -> None:
    sandbox = Sandbox("workspace-write")
    try:
        confined = ConfinedGates(manager, sandbox)
        code, output = gate(confined, f"echo in > inside.txt && touch {outside}", ws)
        assert code != 0 and "Read-only file system" in output, output
        assert (ws / "inside.txt").read_text() == "in\n"  # the workspace is writable
        assert not outside.exists()
        code, output = gate(confined, "echo hi; exit 3", ws)
        assert (code, output) == (3, "hi\n")  # output and exit code as they are unconfined
    finally:
        sandbox.close()
    code, _ = gate(ConfinedGates(manager, Sandbox("off")), f"touch {outside}", ws)
    assert code == 0 and outside.exists()


@needs_bwrap
def test_full_auto_confines_gates_and_other_modes_do_not(
    manager: ProcessManager, ws: Path, outside: Path
) -> None:
    for approval, confined in (("full-auto", True), ("never-ask", False)):
        sandbox = Sandbox(approval=lambda approval=approval: approval)
        try:
            code, _ = gate(ConfinedGates(manager, sandbox), f"touch {outside}", ws)
        finally:
            sandbox.close()
        assert (code != 0) is confined, approval
        assert outside.exists() is not confined
        outside.unlink(missing_ok=True)


class InstantAgent:
    """An AgentPort whose every turn ends at once."""

    def __init__(self) -> None:
        self._events: SimpleQueue[Done] = SimpleQueue()

    def send(self, text: str) -> None:
        self._events.put(Done(cancelled=False, reason="completed"))

    def cancel(self) -> None:
        return None

    def next_event(self, timeout: float | None = None) -> Done | None:
        return self._events.get(timeout=timeout)


def test_a_sandbox_that_cannot_run_fails_the_gate_as_unstarted(
    manager: ProcessManager, ws: Path
) -> None:
    broken = Sandbox("workspace-write", prober=lambda _: Probe(False, "bwrap: not here"))
    plan = parse_plan(
        b'max_attempts = 1\n[[milestones]]\nname = "m"\ntask = "t"\ngates = ["touch x"]\n',
        "P.toml",
    )
    runner = PlanRunner(plan, InstantAgent(), ConfinedGates(manager, broken), ws)
    runner.start()
    events = list(runner.events())
    runner.join()
    gates = [e for e in events if isinstance(e, GateFinished)]
    assert [(g.exit_code, g.output_tail) for g in gates] == [
        (None, "could not start: the sandbox cannot run: bwrap: not here")
    ]
    assert not (ws / "x").exists()
    assert events[-1] == PlanFinished("failed", 0, 1, 1)
