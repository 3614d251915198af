"""What the sandbox tests share: whether bwrap runs here (tests that start confined
processes are skipped, with the probe's reason, where it cannot), a workspace that is a
git repository, and a ProcessManager whose every process is gone after the test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.sandbox.probe import probe
from codecoder.tools.process import ProcessManager

_FOUND = probe()
needs_bwrap = pytest.mark.skipif(not _FOUND.works, reason=f"no sandbox here: {_FOUND.detail}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "README.md").write_text("hello\n")
    return root


@pytest.fixture
def manager() -> Iterator[ProcessManager]:
    processes = ProcessManager(grace=0.5)
    yield processes
    processes.close()
