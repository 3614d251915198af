"""A checkpoint that fails on a full disk cleans up after itself and says so once; the
store, undo and the next sessions go on working (issue 32, item 2)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.checkpoints.helpers import CLI, UNCONFINED, call, turn, undo
from tests.smalldisk import small_disk, used

pytestmark = pytest.mark.timeout(120)

WRITE_8MB = "python3 -c \"import os; open('big.bin', 'wb').write(os.urandom(8 << 20))\""


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The data folder (sessions and checkpoints) on a 4 MB filesystem."""
    with small_disk(tmp_path / "data", 4 << 20) as folder:
        monkeypatch.setenv("XDG_DATA_HOME", str(folder))
        yield folder


def test_a_snapshot_that_fills_the_disk_leaves_nothing_and_says_so_once(
    tmp_path: Path, data: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kept.txt").write_text("one\n")
    script = tmp_path / "big.json"
    script.write_text(json.dumps([[call("run_command", command=WRITE_8MB)], ["done"]]))
    result = subprocess.run(
        [*CLI, "exec", "--json", *UNCONFINED, "--script", str(script), "-C", str(workspace),
         "go"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "no checkpoint of" in line]
    assert len(said) == 1, result.stderr
    assert "`python3 -c" in said[0] and "/undo will not restore" in said[0]
    assert "Traceback" not in result.stderr
    left = [p.name for p in data.rglob("tmp_*")]
    assert not left, left
    assert used(data) < 1 << 20  # nothing of the 8 MB is kept
    # The store, the next session and undo work as before.
    (workspace / "big.bin").unlink()
    turn(workspace, call("write_file", path="new.txt", content="new\n"), new=True)
    turn(workspace, call("run_command", command="echo two >> kept.txt"))
    assert (workspace / "kept.txt").read_text() == "one\ntwo\n"
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "kept.txt").read_text() == "one\n"
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "new.txt").exists()
