"""Hooks in the sandbox (issue 25, item 3): a hook runs workspace content, so in a
session whose commands are confined it is confined too, and where they run unconfined by
default it runs in workspace-write (nobody is asked before a hook runs). The issue's
example end to end through `codecoder exec`: the model writes a Makefile whose `test`
target writes outside the workspace, and the docs' stop hook `make -s test` runs it.
Real bwrap, real processes; skipped with the probe's reason where bwrap cannot run."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.hooks.config import HookSet, HookSpec
from codecoder.hooks.runner import HookRunner
from codecoder.kernel.cancel import CancelToken
from codecoder.sandbox.probe import Probe
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from tests.hooks.helpers import CLI, UNCONFINED, call, exec_json, of_type, toml, user_config
from tests.sandbox.conftest import needs_bwrap

pytestmark = pytest.mark.timeout(120)

FULL_AUTO = ("--approval", "full-auto")
"""No --sandbox: full-auto confines commands (workspace-write) where bwrap works."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def outside() -> Iterator[Path]:
    """A file outside the workspace and outside /tmp (the sandbox's /tmp is private)."""
    path = Path("/var/tmp") / f"codecoder-hook-{uuid.uuid4().hex}"
    yield path
    path.unlink(missing_ok=True)


def makefile(outside: Path) -> str:
    """The hostile model's Makefile: `test` writes outside the workspace (its failure
    ignored, so `make` exits 0 either way) and leaves a mark inside."""
    return f"test:\n\t-touch {outside}\n\techo ran > made.txt\n"


def hook_notices(lines: list[dict[str, object]]) -> list[str]:
    return [str(u["detail"]) for u in of_type(lines, "status_update") if u["notice"] == "hook"]


@needs_bwrap
@pytest.mark.parametrize(
    ("mode", "setting", "escapes"),
    [
        (FULL_AUTO, "", False),  # confined like the model's commands
        (FULL_AUTO, "sandbox = true\n", False),
        (FULL_AUTO, "sandbox = false\n", True),  # the user's own choice: on the host
        (UNCONFINED, "", True),  # --sandbox off, asked for: hooks run on the host
        # commands unconfined by default, `write_file` unasked: the hook is still confined
        (("--approval", "auto-edit"), "", False),
    ],
    ids=["full-auto", "sandbox-true", "user-sandbox-false", "sandbox-off", "auto-edit"],
)
def test_the_stop_hook_runs_the_models_makefile_as_commands_run(
    workspace: Path, outside: Path, mode: tuple[str, ...], setting: str, escapes: bool
) -> None:
    user_config(
        f'[[hooks.stop]]\ncommand = "make -s test"\n{setting}'
        '[[hooks.stop]]\ncommand = "cat > stop.json"\n'
    )
    replies = [[call("write_file", path="Makefile", content=makefile(outside))], ["done"]]
    code, lines, err = exec_json(workspace, replies, mode=mode)
    assert code == 0, err
    assert (workspace / "made.txt").read_text() == "ran\n"  # the hook ran, in the workspace
    assert outside.exists() is escapes
    got = json.loads((workspace / "stop.json").read_text())  # stdin as unconfined
    assert (got["event"], got["cwd"], got["last_message"]) == ("stop", str(workspace), "done")
    assert hook_notices(lines) == []


@needs_bwrap
def test_a_hook_the_sandbox_blocked_says_so(workspace: Path, outside: Path) -> None:
    user_config(f"[[hooks.session_start]]\ncommand = {toml(f'touch {outside}')}\n")
    code, lines, err = exec_json(workspace, [["done"]], mode=FULL_AUTO)
    assert code == 0, err
    assert not outside.exists()
    [warning] = hook_notices(lines)
    assert warning.startswith("session_start hook `touch /var/tmp/") and "` exited 1: " in warning
    assert "Read-only file system" in warning
    assert "[sandbox: the write was blocked" in warning and "`sandbox = false`" in warning


def codecoder(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


@needs_bwrap
def test_a_project_hook_cannot_take_the_sandbox_away(
    workspace: Path, outside: Path, tmp_path: Path
) -> None:
    """A repository's `sandbox = false` never runs, approved or not; its other approved
    hooks run confined."""
    escaped = tmp_path / "escaped"
    folder = workspace / ".codecoder"
    folder.mkdir()
    (folder / "config.toml").write_text(
        f"[[hooks.stop]]\ncommand = {toml(f'touch {escaped}')}\nsandbox = false\n"
        '[[hooks.stop]]\ncommand = "make -s test"\n'
    )
    (workspace / "Makefile").write_text(makefile(outside))
    assert codecoder("trust", str(workspace)).returncode == 0
    approved = codecoder("hooks", "approve", "-C", str(workspace))
    assert approved.returncode == 0, approved.stderr
    assert "never runs: sandbox = false is for your own config only" in approved.stdout
    listed = codecoder("hooks", "list", "-C", str(workspace)).stdout
    assert f"project  not run (sandbox = false) stop: touch {escaped}" in listed
    assert "project  runs          stop: make -s test" in listed
    code, lines, err = exec_json(workspace, [["done"]], mode=FULL_AUTO)
    assert code == 0, err
    assert not escaped.exists()
    assert (workspace / "made.txt").read_text() == "ran\n" and not outside.exists()
    [notice] = hook_notices(lines)
    assert notice.startswith(f"project hook not run (sandbox = false): stop: touch {escaped}")
    assert "only your own config may run a hook outside the sandbox" in notice


def test_a_sandbox_that_stopped_working_never_runs_a_hook_unconfined(workspace: Path) -> None:
    broken = Sandbox("workspace-write", prober=lambda _: Probe(False, "bwrap: not here"))
    spec = HookSpec(event="stop", command="touch ran", origin="user", source="config.toml")
    manager = ProcessManager(grace=0.5)
    try:
        runner = HookRunner(HookSet(hooks=(spec,)), manager, workspace, "s", sandbox=broken)
        result = runner.run("stop", {}, CancelToken())
    finally:
        manager.close()
    assert result.warnings == [
        "stop hook `touch ran` could not run: the sandbox cannot run: bwrap: not here"
    ]
    assert not (workspace / "ran").exists()
