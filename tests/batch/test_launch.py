"""How a task's exec is started and stopped: the zygote against a plain subprocess, the
zygote's end, and a task that will not stop when asked."""

from __future__ import annotations

import importlib.util
import os
import signal
import threading
import time
from pathlib import Path

import msgspec
import pytest

from codecoder.batch import runner
from codecoder.batch.launch import Launcher, SubprocessLauncher, ZygoteLauncher
from codecoder.batch.runner import TaskControl, TaskOutcome, run_task
from codecoder.batch.tasks import TaskSpec, load_tasks
from codecoder.batch.zygote import PRELOAD
from tests.batch.helpers import (
    call,
    make_repo,
    task_processes,
    write_script,
    write_tasks,
)
from tests.procfs import alive

pytestmark = pytest.mark.timeout(120)


def _spec(tmp_path: Path, replies: list[object], **task: object) -> TaskSpec:
    if not (tmp_path / "repo").exists():
        make_repo(tmp_path / "repo")
    script = write_script(tmp_path, "s.json", replies)
    line = {"id": "t", "repo": "repo", "task": "go", "script": script, **task}
    return load_tasks(write_tasks(tmp_path, [line]))[0]


def _in_thread(
    spec: TaskSpec, launcher: Launcher, control: TaskControl
) -> tuple[threading.Thread, list[TaskOutcome]]:
    outcomes: list[TaskOutcome] = []
    thread = threading.Thread(target=lambda: outcomes.append(run_task(spec, launcher, control)))
    thread.start()
    return thread, outcomes


def _wait_for_commands(count: int) -> set[int]:
    deadline = time.monotonic() + 60
    while len(found := task_processes()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) >= count, "the task's commands never started"
    return found


def test_a_forked_exec_gives_the_result_of_a_fresh_one(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        [
            [
                call("write_file", path="n.txt", content="1\n"),
                call("run_command", command="echo hi"),
            ],
            [{"type": "usage", "input_tokens": 5, "output_tokens": 2}, "Done."],
        ],
        approval="full-auto",
    )
    results = []
    for launcher in (ZygoteLauncher(), SubprocessLauncher()):
        try:
            outcome = run_task(spec, launcher, TaskControl())
        finally:
            launcher.close()
        results.append(msgspec.structs.replace(outcome.result, duration_s=0.0))
        assert outcome.session is not None and b"echo hi" in outcome.session
    forked, fresh = results
    assert forked == fresh
    assert forked.status == "passed" and "+1" in forked.diff and forked.tokens.total() == 7


def test_a_task_that_ignores_sigterm_is_killed_with_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "GRACE", 0.5)
    stubborn = SubprocessLauncher(
        ("sh", "-c", 'trap "" TERM INT; setsid sleep 300 & sleep 301 & wait', "sh")
    )
    spec = _spec(tmp_path, [["unused"]], timeout=1)
    started = time.monotonic()
    outcome = run_task(spec, stubborn, TaskControl())
    took = time.monotonic() - started
    assert outcome.result.status == "timeout" and outcome.result.exit_code == 128 + signal.SIGKILL
    assert 1.5 <= took < 10
    assert not task_processes()  # the setsid escapee too, found by its marker


@pytest.mark.parametrize("how", ["the batch closes it", "SIGKILL"])
def test_the_end_of_the_zygote_ends_its_tasks(tmp_path: Path, how: str) -> None:
    spec = _spec(
        tmp_path,
        [[call("run_command", command="sleep 300 & sleep 301")], ["Never."]],
        approval="full-auto",
        sandbox="off",
    )
    launcher = ZygoteLauncher()
    control = TaskControl()
    thread, outcomes = _in_thread(spec, launcher, control)
    try:
        commands = _wait_for_commands(2)
        zygote = launcher.pid
        assert zygote is not None
        if how == "SIGKILL":
            os.kill(zygote, signal.SIGKILL)  # PR_SET_PDEATHSIG: exec gets SIGTERM
        else:
            launcher.close()  # stdin closes: the zygote SIGTERMs its children
        thread.join(timeout=30)
        assert not thread.is_alive()
    finally:
        control.cancel(hard=True)
        thread.join(timeout=30)
        launcher.close()
    assert outcomes[0].result.status in ("cancelled", "error")
    deadline = time.monotonic() + 10
    while task_processes() and time.monotonic() < deadline:
        time.sleep(0.05)  # exec's watchdog, for the SIGKILLed zygote's orphans
    assert not task_processes()
    assert not any(alive(pid) for pid in commands)


def test_every_module_the_zygote_preloads_exists() -> None:
    """A rename would only make every task slower, silently: this says it at once."""
    missing = [name for name in PRELOAD if importlib.util.find_spec(name) is None]
    assert not missing


def test_cancel_before_the_exec_starts_runs_nothing(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [["ok"]])
    control = TaskControl()
    control.cancel()
    launcher = ZygoteLauncher()
    try:
        outcome = run_task(spec, launcher, control)
    finally:
        launcher.close()
    assert outcome.result.status == "cancelled" and outcome.session is None
    assert launcher.pid is None  # not even the zygote was needed
