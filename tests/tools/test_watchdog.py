"""The watchdog against real process groups: what is registered when our end of its pipe
closes is killed (the group, and escapees by their marker); what ended is left alone;
a watchdog that was killed is replaced. Closing the write end is exactly what the kernel
does when the agent dies, so `close` stands in for a SIGKILL here (tests/cli/test_signals.py
kills a real `codecoder exec`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from codecoder.tools.process import MARKER_VAR
from codecoder.tools.watchdog import Watchdog
from tests.procfs import alive, kill

pytestmark = pytest.mark.timeout(60)


class Group:
    """A shell in its own process group with a job in the group and one that left it
    (setsid), all carrying `marker`; their pids in `pids`."""

    def __init__(self, tmp_path: Path, marker: str) -> None:
        pidfile = tmp_path / f"{marker}.pids"
        command = (
            f"sleep 300 & echo $! >> {pidfile}; setsid sleep 300 & echo $! >> {pidfile}; "
            f"echo $$ >> {pidfile}; wait"
        )
        env = {**os.environ, MARKER_VAR: marker}
        self.proc = subprocess.Popen(["bash", "-c", command], process_group=0, env=env)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            words = pidfile.read_text().split() if pidfile.exists() else []
            if len(words) == 3:
                break
            time.sleep(0.01)
        self.pids = [int(word) for word in pidfile.read_text().split()]
        self.marker = marker

    def gone(self, within: float = 5.0) -> bool:
        deadline = time.monotonic() + within
        while any(alive(pid) for pid in self.pids):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def stop(self) -> None:
        for pid in self.pids:
            kill(pid)
        self.proc.wait()
        for pid in self.pids:  # orphans reparented to us when this process is a subreaper
            with suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


@pytest.fixture
def groups(tmp_path: Path) -> Iterator[list[Group]]:
    made: list[Group] = []
    yield made
    for group in made:
        group.stop()


def test_registered_groups_and_their_escapees_die_when_the_pipe_closes(
    tmp_path: Path, groups: list[Group]
) -> None:
    watchdog = Watchdog()
    doomed = Group(tmp_path, "a" * 32)
    finished = Group(tmp_path, "b" * 32)
    groups += [doomed, finished]
    watchdog.started(doomed.proc.pid, doomed.marker)
    watchdog.started(finished.proc.pid, finished.marker)
    watchdog.start()
    assert watchdog.pid is not None
    watchdog.ended(finished.proc.pid)
    assert all(alive(pid) for pid in doomed.pids + finished.pids)
    watchdog.close()  # what our death does to the pipe
    assert doomed.gone()
    assert all(alive(pid) for pid in finished.pids)  # ended: not the watchdog's any more


def test_nothing_registered_means_a_quiet_exit(tmp_path: Path, groups: list[Group]) -> None:
    watchdog = Watchdog()
    bystander = Group(tmp_path, "c" * 32)
    groups.append(bystander)
    watchdog.started(4_000_000, "d" * 32)  # a group id no process has
    watchdog.start()
    watchdog.ended(4_000_000)
    pid = watchdog.pid
    assert pid is not None and alive(pid)
    watchdog.close()
    assert not alive(pid)  # gone and reaped
    assert all(alive(p) for p in bystander.pids)


def test_a_killed_watchdog_is_replaced_and_told_everything(
    tmp_path: Path, groups: list[Group]
) -> None:
    watchdog = Watchdog()
    first = Group(tmp_path, "e" * 32)
    groups.append(first)
    watchdog.started(first.proc.pid, first.marker)
    watchdog.start()
    old = watchdog.pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    time.sleep(0.1)
    second = Group(tmp_path, "f" * 32)
    groups.append(second)
    watchdog.started(second.proc.pid, second.marker)  # finds the pipe broken: a new one
    assert watchdog.pid not in (None, old)
    watchdog.close()
    assert first.gone() and second.gone()


def test_groups_registered_before_it_starts_are_told_to_it(
    tmp_path: Path, groups: list[Group]
) -> None:
    watchdog = Watchdog()
    early = [Group(tmp_path, f"{n}" * 32) for n in range(1, 4)]
    groups += early
    for group in early[:2]:  # registered before it runs: told to it once it does
        watchdog.started(group.proc.pid, group.marker)
    watchdog.start()
    watchdog.started(early[2].proc.pid, early[2].marker)
    watchdog.ended(early[2].proc.pid)
    watchdog.close()
    assert early[0].gone() and early[1].gone()
    assert all(alive(pid) for pid in early[2].pids)


def test_a_watchdog_that_cannot_start_leaves_commands_alone(tmp_path: Path) -> None:
    watchdog = Watchdog(shell=str(tmp_path / "no-such-shell"))
    watchdog.started(4_000_001, "0" * 32)
    watchdog.start()
    assert watchdog.pid is None
    watchdog.ended(4_000_001)
    watchdog.close()
