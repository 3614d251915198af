"""`Sandbox`, the per-application choice: the mode by flag, config or approval mode, the
notice where bwrap does not work, the network decision, the session's /tmp, grep's
children, and run_command's schema."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, StatusUpdate
from codecoder.kernel.ports import ToolContext, ToolFailure
from codecoder.sandbox import SandboxUnavailable
from codecoder.sandbox.bwrap import Confinement
from codecoder.sandbox.probe import Probe, forget, probe
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.search import Grep
from codecoder.tools.shell import RunCommand

from .conftest import needs_bwrap

WORKS = Probe(True, "fake bwrap confines commands", "/usr/bin/bwrap")
BROKEN = Probe(False, "bwrap cannot create namespaces here (EPERM)", "/usr/bin/bwrap")


def prober(found: Probe) -> tuple[list[str | None], Callable[[str | None], Probe]]:
    asked: list[str | None] = []

    def answer(path: str | None) -> Probe:
        asked.append(path)
        return found

    return asked, answer


def test_full_auto_defaults_to_workspace_write_where_bwrap_works() -> None:
    mode = ["ask"]
    asked, answer = prober(WORKS)
    sandbox = Sandbox(approval=lambda: mode[0], prober=answer)
    assert sandbox.mode() == "off"
    assert asked == []  # no probe where it decides nothing
    mode[0] = "full-auto"  # a client switched the mode during the session
    assert sandbox.mode() == "workspace-write"
    assert sandbox.take_notice() is None


def test_full_auto_without_bwrap_runs_unconfined_and_says_so_once() -> None:
    _, answer = prober(BROKEN)
    sandbox = Sandbox(approval=lambda: "full-auto", prober=answer)
    assert sandbox.confine(Path("/w"), command="make") is None
    notice = sandbox.take_notice()
    assert notice is not None
    assert "commands run without a sandbox" in notice and "EPERM" in notice
    assert sandbox.confine(Path("/w"), command="make") is None
    assert sandbox.take_notice() is None


def test_an_explicit_mode_is_checked_and_never_dropped() -> None:
    _, answer = prober(BROKEN)
    sandbox = Sandbox("read-only", prober=answer)
    with pytest.raises(SandboxUnavailable, match="EPERM"):
        sandbox.check()
    with pytest.raises(SandboxUnavailable):
        sandbox.confine(Path("/w"))
    Sandbox("off", prober=answer).check()
    Sandbox(None, prober=answer).check()


def test_the_network_is_decided_per_command() -> None:
    asked: list[tuple[str, Path]] = []

    def network_for(command: str, cwd: Path) -> bool:
        asked.append((command, cwd))
        return command.startswith("npm install")

    _, answer = prober(WORKS)
    sandbox = Sandbox("workspace-write", network_for=network_for, prober=answer)
    on = sandbox.confine(Path("/w"), command="npm install", cwd=Path("/w/web"))
    off = sandbox.confine(Path("/w"), command="make")
    assert on is not None and on.network
    assert off is not None and not off.network
    assert asked == [("npm install", Path("/w/web")), ("make", Path("/w"))]
    everything = Sandbox("read-only", network=True, prober=answer)
    confined = everything.confine(Path("/w"), command="make", extra_roots=[Path("/x")])
    assert confined is not None and confined.network
    everything.close()
    sandbox.close()


def test_a_line_that_only_reads_runs_read_only_in_a_workspace_write_session() -> None:
    """Decided per command line and only where the session runs workspace-write; the
    extra roots stay in its view (read-only there) and the network is decided as ever."""
    asked: list[tuple[str, Path]] = []

    def reads_only(command: str, cwd: Path) -> bool:
        asked.append((command, cwd))
        return command.startswith("ls")

    _, answer = prober(WORKS)
    kwargs = {"reads_only": reads_only, "network_for": lambda c, w: "fetch" in c}
    session = Sandbox("workspace-write", prober=answer, **kwargs)  # type: ignore[arg-type]
    roots = [Path("/x")]
    reading = session.confine(Path("/w"), command="ls fetch", cwd=Path("/w/s"), extra_roots=roots)
    writing = session.confine(Path("/w"), command="make", extra_roots=roots)
    assert reading is not None and writing is not None
    assert (reading.mode, reading.reads_only, reading.network) == ("read-only", True, True)
    assert (writing.mode, writing.reads_only) == ("workspace-write", False)
    assert reading.extra_roots == writing.extra_roots == (Path("/x"),)
    assert asked == [("ls fetch", Path("/w/s")), ("make", Path("/w"))]
    read_only = Sandbox("read-only", prober=answer, **kwargs)  # type: ignore[arg-type]
    plain = read_only.confine(Path("/w"), command="ls")
    assert plain is not None and (plain.mode, plain.reads_only) == ("read-only", False)
    assert len(asked) == 2  # nothing to decide where the session is read-only already
    assert session.confine(Path("/w")) is not None  # no command line: the session's mode
    assert len(asked) == 2
    for sandbox in (session, read_only):
        sandbox.close()


def test_the_session_tmp_is_never_inside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TMPDIR pointing into the workspace: what commands leave in /tmp would appear in
    it, and a line run read-only could write the workspace through its /tmp."""
    workspace = tmp_path / "ws"
    (workspace / ".tmp").mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(workspace / ".tmp"))
    _, answer = prober(WORKS)
    sandbox = Sandbox("workspace-write", reads_only=lambda c, w: True, prober=answer)
    try:
        confined = sandbox.confine(workspace, command="ls")
        assert confined is not None and confined.tmp is not None
        assert not Path(confined.tmp).is_relative_to(workspace)
        assert Path(confined.tmp).parent == Path("/tmp")
        assert confined.keeps_roots()
    finally:
        sandbox.close()
    assert not list((workspace / ".tmp").iterdir())


def test_only_a_read_only_confinement_with_its_tmp_outside_keeps_the_roots(
    tmp_path: Path,
) -> None:
    """What decides that a command takes no checkpoint (tools/shell.py)."""
    workspace, extra = tmp_path / "ws", tmp_path / "extra"
    for folder in (workspace / "t", extra / "t", tmp_path / "t"):
        folder.mkdir(parents=True)
    outside = str(tmp_path / "t")

    def keeps(mode: str, tmp: str | None) -> bool:
        confinement = Confinement(mode, workspace, extra_roots=(extra,), tmp=tmp)  # type: ignore[arg-type]
        return confinement.keeps_roots()

    assert keeps("read-only", outside) and keeps("read-only", None)
    assert not keeps("workspace-write", outside)
    assert not keeps("read-only", str(workspace / "t"))
    assert not keeps("read-only", str(extra / "t"))


def test_grep_children_are_confined_read_only_whenever_commands_are() -> None:
    _, answer = prober(WORKS)
    sandbox = Sandbox("workspace-write", network=True, prober=answer)
    search = sandbox.confine_search(Path("/w"))
    assert search is not None
    assert (search.mode, search.network, search.tmp) == ("read-only", False, None)
    assert Sandbox("off", prober=answer).confine_search(Path("/w")) is None


def test_the_probe_says_why_when_bwrap_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    forget()
    try:
        found = probe()
        assert not found.works
        assert "not installed" in found.detail and "bubblewrap" in found.detail
    finally:
        forget()


def test_the_probe_reports_the_message_of_a_failing_bwrap(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: nope' >&2\nexit 1\n")
    fake.chmod(0o755)
    found = probe(str(fake))
    assert not found.works
    assert "Creating new namespace failed: nope" in found.detail
    assert found.path == str(fake)


# --- through the tools ---------------------------------------------------------------------


def context(workspace: Path, events: list[AgentEvent]) -> ToolContext:
    return ToolContext("call_1", CancelToken(), workspace, events.append)


def test_run_command_emits_the_notice_once(workspace: Path, manager: ProcessManager) -> None:
    _, answer = prober(BROKEN)
    tool = RunCommand(manager, Sandbox(approval=lambda: "full-auto", prober=answer))
    events: list[AgentEvent] = []
    for _ in range(2):
        result = tool.run({"command": "echo hi"}, context(workspace, events))
        assert result.status == "success"
    notices = [e for e in events if isinstance(e, StatusUpdate) and e.notice == "sandbox"]
    assert len(notices) == 1


def test_a_sandbox_that_stopped_working_fails_the_call(
    workspace: Path, manager: ProcessManager
) -> None:
    _, answer = prober(BROKEN)
    tool = RunCommand(manager, Sandbox("workspace-write", prober=answer))
    with pytest.raises(ToolFailure, match="the sandbox cannot run"):
        tool.run({"command": "echo hi"}, context(workspace, []))


def test_the_sandbox_argument_is_offered_only_with_a_sandbox(manager: ProcessManager) -> None:
    def properties(tool: RunCommand) -> set[str]:
        return set(tool.parameters["properties"])

    assert "sandbox" not in properties(RunCommand(manager))
    assert "sandbox" not in properties(RunCommand(manager, Sandbox("off")))
    assert "sandbox" in properties(RunCommand(manager, Sandbox(None)))
    assert "sandbox" in properties(RunCommand(manager, Sandbox("read-only")))


@needs_bwrap
def test_tmp_lasts_for_the_session_and_is_removed_at_close(
    workspace: Path, manager: ProcessManager, tmp_path: Path
) -> None:
    host = tmp_path / "host-file"
    host.write_text("HOST-CONTENT\n")
    sandbox = Sandbox("workspace-write")
    tool = RunCommand(manager, sandbox)
    first = tool.run({"command": "echo kept > /tmp/note"}, context(workspace, []))
    assert first.status == "success", first.text
    second = tool.run({"command": f"cat /tmp/note; cat {host}"}, context(workspace, []))
    assert second.text.splitlines()[0] == "kept"
    assert "HOST-CONTENT" not in second.text
    assert "[sandbox: /tmp is the sandbox's own" in second.text
    folder = sandbox.confine(workspace)
    assert folder is not None and folder.tmp is not None and os.path.isdir(folder.tmp)
    sandbox.close()
    assert not os.path.exists(folder.tmp)


@needs_bwrap
def test_grep_runs_its_children_in_the_sandbox(workspace: Path, tmp_path: Path) -> None:
    """Through a bwrap that notes its command line: both engines' children are wrapped,
    read-only and without the network, and answer as they do unconfined."""
    log = tmp_path / "argv.log"
    wrapper = tmp_path / "bwrap"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /usr/bin/bwrap "$@"\n')
    wrapper.chmod(0o755)
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("needle = 1\nother\n")
    sandbox = Sandbox("workspace-write", bwrap=str(wrapper))
    answers = []
    for use_rg in (True, False):
        for confined in (sandbox, None):
            grep = Grep(use_rg=use_rg, sandbox=confined)
            answers.append(grep.run({"pattern": "needle"}, context(workspace, [])).text)
    assert answers == ["src/a.py:1:needle = 1"] * 4
    lines = [line for line in log.read_text().splitlines() if "--chdir" in line]
    python_runs = [line for line in lines if " -I -c " in line]
    assert python_runs, lines
    for line in lines:
        assert f"--ro-bind {workspace} {workspace}" in line and "--unshare-net" in line
        assert f"--bind {workspace}" not in line
    sandbox.close()


@needs_bwrap
def test_our_own_modules_under_tmp_stay_visible_read_only(
    workspace: Path, tmp_path: Path, manager: ProcessManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv under /tmp: the private /tmp would hide what grep's Python engine loads. Our
    prefix is bound back, read-only; a sibling file, a folder that is only on the import
    path (the current folder of `python -m`) and a prefix that is a symlink out of /tmp
    stay hidden."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "mod.py").write_text("LIB-CONTENT\n")
    (tmp_path / "secret").write_text("HOST-CONTENT\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "notes").write_text("CWD-CONTENT\n")
    out = tmp_path / "out"
    out.symlink_to("/")
    monkeypatch.setattr("sys.prefix", str(venv))
    monkeypatch.setattr("sys.exec_prefix", str(out))
    monkeypatch.syspath_prepend(str(cwd))
    sandbox = Sandbox("workspace-write")
    command = (
        f"cat {venv}/mod.py; cat {tmp_path}/secret; cat {cwd}/notes; ls {out}/etc;"
        f" touch {venv}/new || echo refused"
    )
    result = RunCommand(manager, sandbox).run({"command": command}, context(workspace, []))
    assert "LIB-CONTENT" in result.text and "refused" in result.text, result.text
    assert "HOST-CONTENT" not in result.text and "CWD-CONTENT" not in result.text
    assert "passwd" not in result.text
    assert not (venv / "new").exists()
    sandbox.close()


def test_sandbox_is_thread_safe_for_the_notice() -> None:
    _, answer = prober(BROKEN)
    sandbox = Sandbox(approval=lambda: "full-auto", prober=answer)
    notices: list[str | None] = []

    def confine() -> None:
        sandbox.confine(Path("/w"))
        notices.append(sandbox.take_notice())

    threads = [threading.Thread(target=confine) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len([n for n in notices if n is not None]) == 1


def test_the_tmp_of_a_killed_session_is_removed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    dead = tmp_path / f"codecoder-sandbox-tmp-{done.stdout.strip()}-abc"
    live = tmp_path / f"codecoder-sandbox-tmp-{os.getppid()}-def"
    for folder in (dead, live):
        (folder / "sub").mkdir(parents=True)
    _, answer = prober(WORKS)
    sandbox = Sandbox("workspace-write", prober=answer)
    confinement = sandbox.confine(Path("/w"))
    assert confinement is not None and confinement.tmp is not None
    assert not dead.exists()
    assert live.exists()
    assert Path(confinement.tmp).parent == tmp_path
    assert Path(confinement.tmp).name.startswith(f"codecoder-sandbox-tmp-{os.getpid()}-")
    sandbox.close()
    assert not Path(confinement.tmp).exists()
