"""Turns that change files, run by `codecoder exec`, and `codecoder undo` after them; a
`git` of our own first on PATH; a ToolContext for calling Checkpoints directly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ToolContext

CLI = [sys.executable, "-m", "codecoder"]
UNCONFINED = ("--approval", "full-auto", "--sandbox", "off")


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def turn(
    workspace: Path,
    *calls: dict[str, Any],
    task: str = "go",
    new: bool = False,
    strict: bool = True,
) -> str:
    """One turn making `calls` (then a last answer); returns the session id. The turn
    goes on the workspace's latest session unless `new`; every call must succeed unless
    not `strict`."""
    script = workspace.parent / f"{workspace.name}-script.json"
    script.write_text(json.dumps([list(calls), ["done"]] if calls else [["done"]]))
    session = () if new or not _has_session(workspace) else ("--continue",)
    result = subprocess.run(
        [*CLI, "exec", "--json", *UNCONFINED, *session, "--script", str(script), "-C",
         str(workspace), task],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    failed = [x for x in lines if x["type"] == "tool_finished" and x["status"] != "success"]
    assert not failed or not strict, failed
    return str(lines[0]["session_id"])


def _has_session(workspace: Path) -> bool:
    from codecoder.sessions import SessionStore

    with SessionStore() as store:
        return store.latest_for(workspace) is not None


def undo(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "undo", "-C", str(workspace), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def tree(workspace: Path) -> dict[str, bytes]:
    """Every file under `workspace` but `.git/` (symlinks as `-> target`)."""
    found: dict[str, bytes] = {}
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            found[rel] = b"-> " + str(path.readlink()).encode()
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def git_on_path(folder: Path, monkeypatch: pytest.MonkeyPatch, first: str) -> None:
    """A `git` first on PATH that runs the shell lines `first`, then the real git."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    script = folder / "git"
    script.write_text(f'#!/bin/sh\n{first}exec {real} "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


def logging_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that notes each subcommand in the file returned, then runs
    the real one."""
    log = tmp_path / "git.log"
    git_on_path(tmp_path / "bin", monkeypatch, f'echo "$1" >> {log}\n')
    return log


def logged(log: Path) -> list[str]:
    """The subcommands `logging_git` noted so far; the two listings a snapshot runs side
    by side (objects.py `stage`), in whichever order they started, as one order."""
    names = log.read_text().split() if log.exists() else []
    for at in range(len(names) - 1):
        if names[at : at + 2] == ["ls-files", "diff-files"]:
            names[at : at + 2] = ["diff-files", "ls-files"]
    return names


def context(workspace: Path, token: CancelToken | None = None) -> ToolContext:
    return ToolContext(
        call_id="c1", cancel=token or CancelToken(), workspace=workspace, emit=lambda e: None
    )
