"""`codecoder batch --ray`: the issue's ten tasks on a local Ray cluster give the local
pool's results, and Ctrl+C cancels tasks running in Ray workers. Every Ray test of the
project is here: the module is skipped, with the reason, where Ray is not installed
(`pip install 'codecoder[ray]'`; CI installs it when it can)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'codecoder[ray]')")

from tests.batch.helpers import (  # noqa: E402
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
from tests.procfs import alive  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray of 2 CPUs for the module, its workers in a home of their own; the
    address that `--ray` takes."""
    home = tmp_path_factory.mktemp("ray-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            patch.setenv(var, str(home / var.lower()))
        patch.setenv("RAY_AUTH_MODE", "disabled")  # the batch's driver is another process
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield ray.get_runtime_context().gcs_address
        finally:
            ray.shutdown()


@pytest.fixture(autouse=True)
def _ray_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")


def _comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what differs from run to run: durations, where the export went."""
    same = {k: v for k, v in result.items() if k not in ("duration_s", "session_export")}
    if "gates" in same:
        same["gates"] = [{**g, "duration_ms": 0} for g in same["gates"]]
    return same


def test_ten_tasks_on_ray_give_the_local_pools_results(tmp_path: Path, cluster: str) -> None:
    tasks, expected = ten_tasks(tmp_path)
    on_ray = tmp_path / "ray.jsonl"
    done = run_batch(str(tasks), "-o", str(on_ray), "--ray", cluster, timeout=240)
    assert done.returncode == 1 and on_ray.exists(), done.stderr
    ray_results = read_results(on_ray)
    check_ten(ray_results, expected)
    local = tmp_path / "local.jsonl"
    assert run_batch(str(tasks), "-o", str(local), "--parallel", "2").returncode == 1
    local_results = read_results(local)
    for id in expected:
        assert _comparable(ray_results[id]) == _comparable(local_results[id]), id
    exported = (tmp_path / ray_results["edit"]["session_export"]).read_text()
    assert exported == (tmp_path / local_results["edit"]["session_export"]).read_text()
    assert "6 passed · 2 failed · 1 error · 1 timeout" in done.stderr
    assert not task_processes()


def test_ctrl_c_cancels_the_tasks_running_in_ray_workers(tmp_path: Path, cluster: str) -> None:
    make_repo(tmp_path / "repo")
    slow = write_script(
        tmp_path,
        "slow.json",
        [[{"type": "tool_call", "name": "run_command",
           "args": {"command": "echo started > s.txt; sleep 300 & sleep 301"}}], ["Never."]],
    )  # fmt: skip
    tasks = write_tasks(
        tmp_path,
        [
            {"id": f"t{n}", "repo": "repo", "task": "wait", "script": slow,
             "approval": "full-auto", "sandbox": "off"}
            for n in range(4)
        ],
    )  # fmt: skip
    out = tmp_path / "results.jsonl"
    batch = subprocess.Popen(
        [*CLI, "batch", str(tasks), "-o", str(out), "--ray", cluster],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        process_group=0,
    )
    try:
        deadline = time.monotonic() + 120
        while len(tasks_sleeping()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        running = task_processes()
        assert len(tasks_sleeping()) == 2, "the tasks' commands never started"
        started = time.monotonic()
        os.killpg(batch.pid, signal.SIGINT)
        _, stderr = batch.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.communicate()
    assert batch.returncode == 130, stderr
    assert took < 20, "cancel waited for the tasks instead of stopping them"
    results = read_results(out)
    assert len(results) == 2 and all(r["status"] == "cancelled" for r in results.values())
    assert all(r["exit_code"] == 130 and "+started" in r["diff"] for r in results.values())
    assert "2 not started" in stderr.decode()
    deadline = time.monotonic() + 10
    while task_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not task_processes()
    assert not any(alive(pid) for pid in running)


def test_ray_local_starts_a_ray_for_the_run_and_stops_it(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    answer = write_script(tmp_path, "a.json", [["ok"]])
    tasks = write_tasks(
        tmp_path, [{"id": id, "repo": "repo", "task": "x", "script": answer} for id in "ab"]
    )
    done = run_batch(str(tasks), "--ray", "local", "--parallel", "2", timeout=240)
    assert done.returncode == 0, done.stderr
    results = read_results(tmp_path / "tasks.results.jsonl")
    assert {r["status"] for r in results.values()} == {"passed"}
    assert "2 tasks in" in done.stderr
