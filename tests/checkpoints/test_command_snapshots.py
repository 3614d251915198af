"""The snapshots around a command: only the staging of the work tree is on the turn's path
before the command (the index is copied, its tree written while the command runs, off the
path), the "before" is the work tree as it was before the command even so, and no copy of
the index outlives its use or a killed session."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import msgspec
import pytest

from codecoder.checkpoints.objects import ObjectStore, _blob_id
from codecoder.checkpoints.record import Checkpoints, CheckpointSink, decode_changes
from codecoder.kernel.messages import ToolResult, tool_result
from tests.checkpoints.helpers import context, logged, logging_git


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return logging_git(tmp_path, monkeypatch)


STAGE = ["diff-files", "ls-files", "update-index"]
"""A snapshot of a tree that changed: one walk (the two listings), then what changed staged."""


def test_only_staging_is_before_the_command_and_the_before_is_before_it(
    tmp_path: Path, git_log: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("old\n")
    (workspace / "gone.txt").write_text("removed by the command\n")
    store = tmp_path / "store"
    saved: list[bytes | None] = []
    kept = Checkpoints(
        ObjectStore(workspace, store), CheckpointSink(save=lambda t, m, body: saved.append(body))
    )
    before_command: list[str] = []
    during_command: list[str] = []

    def command() -> ToolResult:
        before_command.extend(logged(git_log))
        deadline = time.monotonic() + 10
        while "write-tree" not in logged(git_log) and time.monotonic() < deadline:
            time.sleep(0.01)  # the tree of the snapshot before is written meanwhile
        during_command.extend(logged(git_log))
        (workspace / "a.txt").write_text("new\n")
        (workspace / "b.txt").write_text("made\n")
        (workspace / "gone.txt").unlink()
        return tool_result("c1", "ran")

    ctx = context(workspace)
    assert kept.around_command(command, ctx).text == "ran"
    assert before_command in (STAGE, [*STAGE, "write-tree"])
    assert during_command == [*STAGE, "write-tree"]
    kept.close()
    after = ["diff-files", "ls-files", "update-index", "update-index", "diff-index"]
    assert logged(git_log) == [*STAGE, "write-tree", *after]  # gone.txt: --force-remove
    changes = {c.path: c for c in decode_changes(saved[-1] or b"")}
    assert sorted(changes) == ["a.txt", "b.txt", "gone.txt"]
    a, b, removed = changes["a.txt"], changes["b.txt"], changes["gone.txt"]
    assert a.before is not None and a.before.sha == _blob_id(b"old\n")
    assert a.after is not None and a.after.sha == _blob_id(b"new\n")
    assert b.before is None and removed.after is None
    assert removed.before is not None
    assert removed.before.sha == _blob_id(b"removed by the command\n")
    assert not list(store.glob("index.before-*"))


def test_a_failed_command_still_keeps_its_changes_and_leaves_no_copy(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = tmp_path / "store"
    saved: list[bytes | None] = []
    kept = Checkpoints(
        ObjectStore(workspace, store), CheckpointSink(save=lambda t, m, body: saved.append(body))
    )

    def command() -> ToolResult:
        (workspace / "half.txt").write_text("written before it failed\n")
        raise OSError("the command broke")

    ctx = context(workspace)
    with pytest.raises(OSError):
        kept.around_command(command, ctx)
    kept.close()
    assert [c.path for c in decode_changes(saved[-1] or b"")] == ["half.txt"]
    assert not list(store.glob("index.before-*"))


def test_copies_a_killed_session_left_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = tmp_path / "store"
    objects = ObjectStore(workspace, store)
    objects.tree_of(objects.index_now())
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = store / f"index.before-{dead.pid}-0"
    live = store / f"index.before-{os.getpid()}-999"
    for copy in (left, live):
        shutil.copyfile(store / "index", copy)
    ObjectStore(workspace, store).ensure()  # a new session's first use
    assert not left.exists()
    assert live.exists()


def test_a_planted_name_for_the_copy_is_refused_and_its_target_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's name is guessable (pid and a counter): whatever already has it, a
    symlink to a file of the user's, a dangling symlink or a plain file, is neither
    followed nor overwritten, and the snapshot fails with a clear error."""
    import itertools

    from codecoder.checkpoints import objects as module
    from codecoder.checkpoints.objects import StoreError

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    store = tmp_path / "store"
    objects = ObjectStore(workspace, store)
    objects.tree_of(objects.index_now())
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    plants = {
        "symlink": lambda name: name.symlink_to(victim),
        "dangling": lambda name: name.symlink_to(tmp_path / "nowhere"),
        "file": lambda name: name.write_text("planted\n"),
    }
    for number, (kind, plant) in enumerate(plants.items(), start=100):
        monkeypatch.setattr(module, "_copies", itertools.count(number))
        name = store / f"index.before-{os.getpid()}-{number}"
        plant(name)
        with pytest.raises(StoreError, match="cannot make"):
            objects.index_now()
        assert victim.read_text() == "mine\n", kind
        assert not (tmp_path / "nowhere").exists(), kind
    assert (store / f"index.before-{os.getpid()}-102").read_text() == "planted\n"


def test_changes_since_a_kept_index_equal_changes_since_its_tree(tmp_path: Path) -> None:
    """The copy stands for the tree it would have written then: diffing against its tree,
    written later, gives what diffing against a tree written at once gives."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "x").write_text("1\n")
    objects = ObjectStore(workspace, tmp_path / "store")
    copy = objects.index_now()
    (workspace / "x").write_text("2\n")
    (workspace / "y").write_text("new\n")
    objects.stage()  # our index moves on (the next snapshot)
    later = objects.tree_of(copy)
    assert not copy.exists()
    (workspace / "x").write_text("1\n")
    (workspace / "y").unlink()
    assert objects.tree_of(objects.index_now()) == later
    found = msgspec.json.encode(objects.changes_since(later))
    assert found == msgspec.json.encode(([], []))
