"""The event channel holds back a command's live output, not memory, while the client
lags (kernel/channel.py): real `run_command` children through a real loop, a client that
stops reading, then reads or cancels."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codecoder.kernel.channel import OUTPUT_IN_FLIGHT
from codecoder.kernel.events import AgentEvent, Done, ToolFinished, ToolOutput
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.providers.scripted import ScriptedProvider
from codecoder.tools.process import CHUNK, ProcessManager
from codecoder.tools.shell import RunCommand
from tests.procfs import marked

pytestmark = pytest.mark.timeout(60)

Start_ = Callable[[AgentLoop], AgentHandle]
LAG = 1.0  # seconds the client reads nothing: a command prints hundreds of MB meanwhile
BOUND = 0.2  # 10x the 20 ms cancel-latency target
LINE = "the quick brown fox jumps over the lazy dog\n"


@pytest.fixture
def manager() -> Iterator[ProcessManager]:
    manager = ProcessManager(grace=0.5)
    yield manager
    manager.close()


def running(tmp_path: Path, manager: ProcessManager, start: Start_, command: str) -> AgentHandle:
    replies = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": command}}],
        ["done"],
    ]
    loop = AgentLoop(ScriptedProvider.from_replies(replies), [RunCommand(manager)], tmp_path)
    handle = start(loop)
    handle.send("go")
    return handle


def queued_output(handle: AgentHandle) -> tuple[int, list[AgentEvent]]:
    """The characters of live output waiting for the client now: the events queued at
    this moment, taken (later ones queue behind them)."""
    waiting = [handle.next_event(5) for _ in range(handle.statistics()["queued_events"])]
    taken = [e for e in waiting if e is not None]
    return sum(len(e.chunk) for e in taken if isinstance(e, ToolOutput)), taken


def test_a_lagging_client_holds_the_command_back_and_loses_nothing(
    tmp_path: Path, manager: ProcessManager, start_agent: Start_
) -> None:
    size = 50_000_000
    handle = running(tmp_path, manager, start_agent, f"yes '{LINE[:-1]}' | head -c {size}")
    time.sleep(LAG)
    waiting, taken = queued_output(handle)
    assert waiting <= OUTPUT_IN_FLIGHT + CHUNK  # it was all 50 MB, queued for the client
    events = [*taken, *handle.turn(30)]
    output = [e.chunk for e in events if isinstance(e, ToolOutput)]
    assert sum(map(len, output)) == size
    assert "".join(output[:10]).startswith(LINE * 100)
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.result is not None and finished.result.status == "success"


def test_cancel_reaches_a_command_held_back_by_a_lagging_client(
    tmp_path: Path, manager: ProcessManager, start_agent: Start_
) -> None:
    command = f"echo \"$CODECODER_CALL\" > {tmp_path}/marker; yes '{LINE[:-1]}'"
    handle = running(tmp_path, manager, start_agent, command)
    time.sleep(LAG)
    waiting, _ = queued_output(handle)
    assert waiting <= OUTPUT_IN_FLIGHT + CHUNK
    time.sleep(0.2)  # held again: the pump waits for room
    cancelled = time.monotonic()
    handle.cancel()
    done = [e for e in handle.turn(5) if isinstance(e, Done)]
    assert time.monotonic() - cancelled <= BOUND
    assert done[0].cancelled
    assert marked((tmp_path / "marker").read_text().strip()) == set()
