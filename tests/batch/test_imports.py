"""Start-up counts: `codecoder --version` and `exec` load nothing of the batch or of Ray,
and `batch --ray` without Ray says what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.helpers import CLI, make_repo, run_batch, write_script, write_tasks

pytestmark = pytest.mark.timeout(60)


def _imported(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codecoder", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}


def test_version_and_exec_import_no_batch_and_no_ray(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    script = tmp_path / write_script(tmp_path, "s.json", [["ok"]])
    for args in (
        ["--version"],
        ["exec", "--script", str(script), "-C", str(tmp_path / "repo"), "hi"],
    ):
        modules = _imported(*args)
        assert "codecoder.cli.main" in modules  # the measurement works
        assert not {m for m in modules if m.startswith(("codecoder.batch", "ray"))}, args
        assert "codecoder.cli.batch_cmd" not in modules


def test_batch_without_ray_says_what_to_install(tmp_path: Path) -> None:
    """Ray hidden by a stand-in that fails to import as a missing package does."""
    fake = tmp_path / "no-ray"
    (fake / "ray").mkdir(parents=True)
    (fake / "ray" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n"
    )
    make_repo(tmp_path / "repo")
    tasks = write_tasks(
        tmp_path,
        [
            {
                "id": "a",
                "repo": "repo",
                "task": "x",
                "script": write_script(tmp_path, "s.json", [["ok"]]),
            }
        ],
    )
    path = os.pathsep.join(filter(None, [str(fake), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run(
        [*CLI, "batch", str(tasks), "--ray", "auto"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "codecoder batch: --ray needs Ray: pip install 'codecoder[ray]'"
    assert not (tmp_path / "tasks.results.jsonl").exists()
    assert run_batch(str(tasks)).returncode == 0  # the local pool needs no Ray
