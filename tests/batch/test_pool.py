"""`codecoder batch` on the local pool, as users run it: real clones, real exec processes
forked from the zygote, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.batch.helpers import (
    CLI,
    check_ten,
    make_repo,
    read_results,
    run_batch,
    task_processes,
    tasks_sleeping,
    ten_tasks,
    write_script,
    write_tasks,
)
from tests.procfs import alive, children_of

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR for the batch's clones, so a test can see that they are all gone."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def test_ten_tasks_give_the_right_result_lines_and_summary(tmp_path: Path, scratch: Path) -> None:
    tasks, expected = ten_tasks(tmp_path)
    out = tmp_path / "results.jsonl"
    done = run_batch(str(tasks), "-o", str(out), "--parallel", "2")
    assert done.returncode == 1, done.stderr  # some tasks did not pass
    results = read_results(out)
    check_ten(results, expected)
    assert len(out.read_text().splitlines()) == 10  # one line per task
    export = tmp_path / results["on-branch"]["session_export"]
    messages = [json.loads(line) for line in export.read_text().splitlines()]
    assert "only on the feature branch" in json.dumps(messages)  # ran at the ref
    assert {m["role"] for m in messages} >= {"user", "assistant", "tool"}
    summary = done.stderr[done.stderr.index("id  ") :]
    for id, status in expected.items():
        assert any(line.split()[:2] == [id, status] for line in summary.splitlines()), id
    assert "10 tasks in" in summary and "6 passed · 2 failed · 1 error · 1 timeout" in summary
    assert "107 tokens" in summary
    assert "slow: timeout · batch [" in done.stderr  # the progress line, once per task
    assert not task_processes(), "a task's process outlived the batch"
    assert list(scratch.iterdir()) == [], "a clone was left behind"
    assert (tmp_path / "repo" / "uncommitted.txt").exists()  # the source is untouched
    assert not (tmp_path / "repo" / "new.txt").exists()


def test_a_bad_tasks_file_is_refused_before_anything_runs(tmp_path: Path, scratch: Path) -> None:
    make_repo(tmp_path / "repo")
    answer = write_script(tmp_path, "a.json", [["ok"]])
    tasks = write_tasks(
        tmp_path,
        [
            {"id": "a", "repo": "repo", "task": "x", "script": answer},
            {"id": "b", "repo": "repo", "task": "x", "scirpt": answer},
            {"id": "a", "repo": "repo", "task": "y", "script": answer},
            {"id": "c", "repo": "repo", "task": "x", "plan": "p.toml"},
            {"id": "d", "repo": "repo", "task": "x", "approval": "yolo", "timeout": -1},
            {"id": "e", "repo": "repo", "task": "x", "script": "missing.json"},
        ],
    )
    done = run_batch(str(tasks))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert f"codecoder batch: {tasks}:2: unknown key `scirpt`; did you mean `script`?" in lines
    assert f"codecoder batch: {tasks}:3: id 'a' is also the id on line 1" in lines
    assert f"codecoder batch: {tasks}:4: give exactly one of `task` and `plan`" in lines
    assert any(":5: `approval` must be one of" in line for line in lines)
    assert any(":5: `timeout` must be seconds" in line for line in lines)
    assert any(":6: `script`: cannot read" in line for line in lines)
    assert not (tmp_path / "tasks.results.jsonl").exists()
    assert list(scratch.iterdir()) == []


def test_an_existing_results_file_needs_resume(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    tasks = write_tasks(
        tmp_path,
        [
            {
                "id": "a",
                "repo": "repo",
                "task": "x",
                "script": write_script(tmp_path, "a.json", [["ok"]]),
            }
        ],
    )
    (tmp_path / "tasks.results.jsonl").write_text('{"id": "z"}\n')
    done = run_batch(str(tasks))
    assert done.returncode == 2 and "--resume" in done.stderr
    assert (tmp_path / "tasks.results.jsonl").read_text() == '{"id": "z"}\n'


def test_resume_runs_only_the_missing_and_cancelled_ids(tmp_path: Path, scratch: Path) -> None:
    make_repo(tmp_path / "repo")
    answer = write_script(tmp_path, "a.json", [["ok"]])
    ids = ["t1", "t2", "t3", "t4", "t5"]
    tasks = write_tasks(
        tmp_path, [{"id": id, "repo": "repo", "task": "x", "script": answer} for id in ids]
    )
    out = tmp_path / "tasks.results.jsonl"
    first = run_batch(str(tasks))
    assert first.returncode == 0, first.stderr
    lines = {json.loads(line)["id"]: line for line in out.read_text().splitlines()}
    cancelled = json.dumps({**json.loads(lines["t2"]), "status": "cancelled"})
    # t1 and t2 (cancelled) kept, t3 cut off mid-line by a killed batch, t4 and t5 missing
    out.write_text(f"{lines['t1']}\n{cancelled}\n{lines['t3'][:30]}")
    again = run_batch(str(tasks), "--resume")
    assert again.returncode == 0, again.stderr
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in written[:2]] == ["t1", "t2"]
    assert sorted(r["id"] for r in written[2:]) == ["t2", "t3", "t4", "t5"]
    assert all(r["status"] == "passed" for r in written[2:])
    assert "4 tasks in" in again.stderr and "1 already done" in again.stderr
    nothing = run_batch(str(tasks), "--resume")
    assert nothing.returncode == 0 and len(out.read_text().splitlines()) == 6


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_cancels_every_running_task_and_leaves_a_valid_file(
    tmp_path: Path, scratch: Path, presses: int
) -> None:
    """Once: each exec cancels its turn cleanly (130). Twice at once: they are killed
    (137), unless the first had already done its work."""
    make_repo(tmp_path / "repo")
    slow = write_script(
        tmp_path,
        "slow.json",
        [[call_command("echo started > started.txt; sleep 300 & sleep 301")], ["Never."]],
    )
    tasks = write_tasks(
        tmp_path,
        [
            {"id": f"t{n}", "repo": "repo", "task": "wait", "script": slow,
             "approval": "full-auto", "sandbox": "off"}
            for n in range(5)
        ],
    )  # fmt: skip
    out = tmp_path / "results.jsonl"
    batch = subprocess.Popen(
        [*CLI, "batch", str(tasks), "-o", str(out), "--parallel", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        process_group=0,  # as a shell runs it: Ctrl+C goes to the whole group
    )
    try:
        deadline = time.monotonic() + 60
        while len(tasks_sleeping()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        running = task_processes()
        if len(tasks_sleeping()) < 2:
            os.killpg(batch.pid, signal.SIGKILL)
            pytest.fail(f"the tasks' commands never started: {batch.communicate()[1]!r}")
        for _ in range(presses):
            os.killpg(batch.pid, signal.SIGINT)
        _, stderr = batch.communicate(timeout=30)
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.communicate()
    assert batch.returncode == 130, stderr
    results = read_results(out)
    assert len(results) == 2 and all(r["status"] == "cancelled" for r in results.values())
    codes = {130} if presses == 1 else {130, 137}
    assert all(r["exit_code"] in codes for r in results.values())
    assert all("+started" in r["diff"] for r in results.values())
    assert "3 not started" in stderr.decode()
    # killed (137) tasks' commands may wait a moment as zombies for init to reap them
    assert not task_processes() and not any(alive(pid) for pid in running)
    assert list(scratch.iterdir()) == []
    assert children_of(batch.pid) == []


def call_command(command: str) -> dict[str, object]:
    return {"type": "tool_call", "name": "run_command", "args": {"command": command}}
