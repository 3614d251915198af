"""A cancel never waits for a checkpoint: the snapshot before a command is killed with its
turn (staging a large tree takes seconds), and so is the wait for the snapshot after
the previous command. Git is made slow here by a `git` of our own first on PATH that
sleeps on one subcommand and then runs the real one."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.checkpoints.objects import ObjectStore
from codecoder.checkpoints.record import Checkpoints, CheckpointSink
from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.messages import ToolResult, tool_result
from tests.checkpoints.helpers import context, git_on_path

BOUND = 1.0  # seconds; the git it cancels would sleep 60


@pytest.fixture
def slow_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` that sleeps (its pid in a file, to check it died) on the subcommand the
    file returned names, while it is there."""
    flag = tmp_path / "slow"
    sleep = (
        f'if [ -e {flag} ] && [ "$1" = "$(cat {flag})" ]; then echo $$ > {tmp_path}/git.pid; '
        "sleep 60; fi\n"
    )
    git_on_path(tmp_path / "bin", monkeypatch, sleep)
    return flag


def checkpoints(tmp_path: Path) -> tuple[Checkpoints, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    objects = ObjectStore(workspace, tmp_path / "store")
    return Checkpoints(objects, CheckpointSink(save=lambda *args: None)), workspace


def gone(tmp_path: Path) -> bool:
    pid = int((tmp_path / "git.pid").read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize("slow", ["diff-files", "ls-files", "update-index"])
def test_a_cancel_kills_the_snapshot_before_a_command(
    tmp_path: Path, slow_git: Path, slow: str
) -> None:
    """Whichever of its git processes a large tree makes slow: one of the two listings
    that run side by side, or the staging of a.txt."""
    kept, workspace = checkpoints(tmp_path)
    slow_git.write_text(slow)
    token = CancelToken()
    ran: list[bool] = []

    def command() -> ToolResult:
        ran.append(True)
        return tool_result("c1", "ran")

    threading.Timer(0.3, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        kept.around_command(command, context(workspace, token))
    assert time.monotonic() - started < 0.3 + BOUND
    assert not ran  # the command never started
    assert gone(tmp_path)
    assert not (tmp_path / "store" / "index.lock").exists()
    slow_git.unlink()  # the store still works after a killed git
    result = kept.around_command(command, context(workspace, CancelToken()))
    assert result.text == "ran"
    kept.close()


def test_a_cancel_ends_the_wait_for_the_last_commands_snapshot(
    tmp_path: Path, slow_git: Path
) -> None:
    kept, workspace = checkpoints(tmp_path)

    def slow_after() -> ToolResult:  # the snapshot before was quick; the one after sleeps
        slow_git.write_text("diff-files")  # nothing changed: only the listing runs
        return tool_result("c1", "two")

    second = kept.around_command(slow_after, context(workspace, CancelToken()))
    assert second.text == "two"  # the turn did not wait for the snapshot after
    while not (tmp_path / "git.pid").exists():
        time.sleep(0.01)
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        kept.around_file(
            workspace / "a.txt", lambda: tool_result("c1", "x"), context(workspace, token)
        )
    assert time.monotonic() - started < 0.2 + BOUND
    shell = (tmp_path / "git.pid").read_text().strip()
    subprocess.run(["pkill", "-KILL", "-P", shell], check=False)  # its sleep: git goes on
    kept.close()  # the session's end still waits for that snapshot
    assert not Path(f"/proc/{shell}").exists()


def test_our_own_folders_in_the_workspace_are_never_snapshotted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session in the home folder: the session store and the object store are in the
    workspace; snapshotting them made every snapshot slower than the one before."""
    workspace = tmp_path / "home"
    workspace.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(workspace / "my [data]*"))  # glob characters too
    (workspace / "notes.txt").write_text("mine\n")
    (workspace / "my [data]x").mkdir()
    (workspace / "my [data]x" / "kept.txt").write_text("a folder the pattern must not match\n")
    objects = ObjectStore(workspace)  # its folder is in the data folder, so in the workspace
    data = paths.data_dir()
    data.mkdir(parents=True, exist_ok=True)
    (data / "sessions.sqlite3").write_bytes(b"\0" * 1000)
    tree = objects.tree_of(objects.index_now())
    listed = (
        objects.git("ls-tree", "-r", "-z", "--name-only", tree).stdout.decode().split("\0")[:-1]
    )
    assert sorted(listed) == ["my [data]x/kept.txt", "notes.txt"]
