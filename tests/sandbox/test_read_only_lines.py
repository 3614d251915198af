"""A line that only reads, in a workspace-write session, runs read-only and takes no
checkpoint (sandbox/runtime.py, tools/shell.py), for real through bwrap: it gives what it
gives unconfined; a line the parser misread cannot write the workspace however it
tries, and is told why; the checkpoint's git processes run around a line that may write
and around no other."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from codecoder.checkpoints.objects import ObjectStore
from codecoder.checkpoints.record import CheckpointedTool, Checkpoints, CheckpointSink
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import Tool, ToolContext
from codecoder.permissions.writes import writes_nothing
from codecoder.sandbox import SandboxMode
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand
from tests.checkpoints.helpers import logged, logging_git

from .conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(120)]


def call(tool: Tool, workspace: Path, command: str) -> ToolResult:
    ctx = ToolContext("call_1", CancelToken(), workspace, lambda event: None)
    return tool.run({"command": command, "timeout": 60}, ctx)


def tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under `root` (`.git` included): its mode and what it holds."""
    found: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            body = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            found[str(path.relative_to(root))] = (info.st_mode, hashlib.sha256(body).hexdigest())
    return found


def test_a_line_that_reads_gives_what_it_gives_unconfined(
    manager: ProcessManager, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a.txt").write_text("one\ntwo\n")
    line = "cat README.md sub/a.txt | wc -l; ls sub; git status --short | sort; echo $?"
    reads = writes_nothing
    assert reads(line, workspace)
    confined = Sandbox("workspace-write", reads_only=reads)
    try:
        inside = call(RunCommand(manager, confined), workspace, line)
        mounts = call(RunCommand(manager, confined), workspace, "cat /proc/self/mountinfo")
    finally:
        confined.close()
    outside = call(RunCommand(manager), workspace, line)
    assert inside.status == outside.status == "success"
    assert inside.text == outside.text
    assert inside.text.splitlines()[:3] == ["3", "a.txt", "?? README.md"]
    (mount,) = [f for f in mounts.text.splitlines() if f.split(" ")[4:5] == [str(workspace)]]
    assert mount.split(" ")[5].split(",")[0] == "ro"  # it ran read-only


HOSTILE = [
    "echo x > made.txt",
    "echo x >> README.md",
    "touch t",
    "mkdir d",
    "rm README.md",
    "mv README.md moved",
    "chmod 000 README.md",
    "ln -s README.md link",
    'python3 -c \'open("p", "w").write("x")\'',
    "echo x > /proc/self/cwd/q",
    "cd .git && echo '[core]' >> config",
    "git init -q nested",
    "git add README.md",
    "cp /dev/null README.md",
    "setsid sh -c 'sleep 0.2; touch late' </dev/null >/dev/null 2>&1 & sleep 0.5",
]


def test_a_misread_line_cannot_write_the_workspace(
    manager: ProcessManager, workspace: Path
) -> None:
    """A parser that took every line for a read: each write fails, the workspace (and its
    .git) stays as it was, the model reads why; /tmp stays writable."""
    before = tree(workspace)
    confined = Sandbox("workspace-write", reads_only=lambda command, cwd: True)
    tool = RunCommand(manager, confined)
    try:
        for line in HOSTILE:
            result = call(tool, workspace, line)
            assert tree(workspace) == before, line
            if result.status != "success":  # a failure it must say is the sandbox's
                assert "this command line looked read-only" in result.text, (line, result.text)
        assert call(tool, workspace, "echo t > /tmp/t && cat /tmp/t").text.startswith("t\n")
    finally:
        confined.close()


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkpoints' git processes (the confined commands do not see this `git`: it
    lies in the host's /tmp)."""
    return logging_git(tmp_path, monkeypatch)


def test_checkpoints_are_taken_around_a_line_that_may_write_and_no_other(
    manager: ProcessManager, workspace: Path, tmp_path: Path, git_log: Path
) -> None:
    subprocess.run(["git", "-C", str(workspace), "add", "README.md"], check=True)
    git_log.unlink()
    saved: list[bytes | None] = []
    kept = Checkpoints(
        ObjectStore(workspace, tmp_path / "store"),
        CheckpointSink(save=lambda turn, first, body: saved.append(body)),
    )
    reads = writes_nothing

    made: list[Sandbox] = []

    def through(mode: SandboxMode | None) -> Tool:
        if mode is None:
            return CheckpointedTool(RunCommand(manager), kept)
        made.append(Sandbox(mode, reads_only=reads))
        return CheckpointedTool(RunCommand(manager, made[-1]), kept)

    session = through("workspace-write")
    try:
        assert call(session, workspace, "cat README.md; ls -a").status == "success"
        kept.settle()
        assert logged(git_log) == []  # a line that only reads: no snapshot at all
        assert call(session, workspace, "echo made > made.txt").status == "success"
        kept.settle()
        snapshots = [name for name in logged(git_log) if name != "-C"]  # -C: core.hooksPath
        stage = ["diff-files", "ls-files", "update-index"]
        assert snapshots == [*stage, "write-tree", *stage, "diff-index"]
        assert saved and b"made.txt" in (saved[-1] or b"")
        git_log.unlink()
        read_only = through("read-only")
        assert call(read_only, workspace, "echo x > other.txt").status == "error"
        kept.settle()
        assert logged(git_log) == []  # nothing it runs can change the work tree
        unconfined = through(None)
        assert call(unconfined, workspace, "cat README.md").status == "success"
        kept.settle()
        assert logged(git_log)[:1] == ["diff-files"]  # unconfined: the parser says it reads
    finally:
        kept.close()
        for confined in made:
            confined.close()
