"""Commands confined for real (issue 15's list), through run_command, the ProcessManager
and bwrap: writes outside the workspace and into git's and CodeCoder's folders fail,
credential folders are unreadable, the network is off unless allowed, an escaped daemon
dies with the command, and an allowed command's output and exit code are what they are
unconfined. Skipped, with the probe's reason, where bwrap cannot run."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent
from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import ToolContext
from codecoder.sandbox import SandboxMode, wrap_argv
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand
from tests.procfs import alive, kill, pids, read, wait_exit

from .conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(120)]


def run(
    manager: ProcessManager,
    workspace: Path,
    command: str,
    mode: SandboxMode | None = "workspace-write",
    **sandbox: object,
) -> ToolResult:
    """`command` through run_command in `workspace`, confined in `mode` (None: no sandbox)."""
    confined = Sandbox(mode, **sandbox) if mode else None  # type: ignore[arg-type]
    tool = RunCommand(manager, confined)
    events: list[AgentEvent] = []
    ctx = ToolContext("call_1", CancelToken(), workspace, events.append)
    try:
        return tool.run({"command": command, "timeout": 60}, ctx)
    finally:
        if confined is not None:
            confined.close()


def lines(result: ToolResult) -> list[str]:
    return result.text.splitlines()


# --- writes -------------------------------------------------------------------------------


def test_writes_inside_the_workspace_and_tmp_work(manager: ProcessManager, workspace: Path) -> None:
    result = run(
        manager, workspace, "echo made > made.txt && mkdir -p d && echo t > /tmp/t && cat /tmp/t"
    )
    assert result.status == "success", result.text
    assert (workspace / "made.txt").read_text() == "made\n"
    assert (workspace / "d").is_dir()


def test_writes_outside_the_workspace_fail(
    manager: ProcessManager, workspace: Path, tmp_path: Path
) -> None:
    """Outside /tmp the root is read-only; beside the workspace under /tmp, the private
    /tmp hides the real one: neither write reaches the disk."""
    var_tmp = Path("/var/tmp") / f"codecoder-sandbox-{uuid.uuid4().hex}"
    beside = tmp_path / "beside"
    beside.mkdir()
    try:
        result = run(manager, workspace, f"touch ../y; echo x > {beside}/x; touch {var_tmp}")
        assert not var_tmp.exists()
    finally:
        var_tmp.unlink(missing_ok=True)
    assert not (beside / "x").exists()
    assert not (tmp_path / "y").exists()
    assert "Read-only file system" in result.text
    assert result.status == "error"
    assert "[sandbox: the write was blocked" in result.text  # the hint for the model


def test_git_folders_and_a_planted_bare_repository_are_read_only(
    manager: ProcessManager, workspace: Path
) -> None:
    planted = workspace / "vendor" / "planted"
    subprocess.run(["git", "init", "-q", "--bare", str(planted)], check=True)
    (workspace / ".codecoder").mkdir()
    before = {p: p.read_bytes() for p in (workspace / ".git" / "config", planted / "config")}
    attempts = {
        ".git/hooks": "echo 'touch pwned' > .git/hooks/pre-commit",
        ".git/config": "git config core.fsmonitor 'touch pwned'",
        ".git/config append": "echo '[core] fsmonitor = touch pwned' >> .git/config",
        "planted config": "echo '[core] fsmonitor = touch pwned' >> vendor/planted/config",
        "planted hooks": "echo x > vendor/planted/hooks/post-checkout",
        ".codecoder": "echo '[permissions]' > .codecoder/config.toml",
    }
    for name, command in attempts.items():
        result = run(manager, workspace, command)
        assert result.status == "error", f"{name}: {result.text}"
        assert "Read-only file system" in result.text or "read-only" in result.text.lower(), name
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (planted / "hooks" / "post-checkout").exists()
    assert not (workspace / ".codecoder" / "config.toml").exists()
    assert {p: p.read_bytes() for p in before} == before
    # the rest of the workspace stays writable, and git can still read its repository
    assert run(manager, workspace, "echo ok > vendor/note && git status --short").status == (
        "success"
    )


def test_a_repository_planted_by_one_command_is_read_only_for_the_next(
    manager: ProcessManager, workspace: Path
) -> None:
    sandbox = Sandbox("workspace-write")
    tool = RunCommand(manager, sandbox)
    ctx = ToolContext("call_1", CancelToken(), workspace, lambda event: None)
    made = tool.run({"command": "git init -q --bare nested"}, ctx)
    again = tool.run({"command": "echo '[core] x = y' >> nested/config"}, ctx)
    sandbox.close()
    assert made.status == "success", made.text
    assert again.status == "error"
    assert "Read-only file system" in again.text


def test_config_files_git_includes_are_read_only(
    manager: ProcessManager, workspace: Path, tmp_path: Path
) -> None:
    """A file the repository's config includes is git's config: a command that writes
    `core.fsmonitor` there has the user's next `git status`, outside the sandbox, run
    what it says. One that exists is bound read-only; one that does not is made, empty,
    and bound; a file included from an included file too; the rest stays writable."""
    pwned = tmp_path / "pwned"
    for included in ("../team.cfg", "../local.cfg"):
        git = ["git", "-C", str(workspace), "config", "--add", "include.path", included]
        subprocess.run(git, check=True)
    (workspace / "team.cfg").write_text("[include]\n\tpath = conf/more.cfg\n")
    (workspace / "conf").mkdir()
    (workspace / "conf" / "more.cfg").write_text("")
    payload = f"printf '[core]\\n\\tfsmonitor = touch {pwned}; false\\n'"
    for name in ("team.cfg", "local.cfg", "conf/more.cfg"):
        for command in (f"{payload} > {name}", f"{payload} >> {name}", f"rm -f {name}"):
            result = run(manager, workspace, command)
            assert result.status == "error", f"{command}: {result.text}"
    assert (workspace / "local.cfg").read_text() == ""  # made, empty, for the bind
    assert (workspace / "team.cfg").read_text() == "[include]\n\tpath = conf/more.cfg\n"
    assert (workspace / "conf" / "more.cfg").read_text() == ""
    assert run(manager, workspace, "echo x > conf/other.cfg").status == "success"
    subprocess.run(["git", "-C", str(workspace), "status"], check=True, capture_output=True)
    assert not pwned.exists()


def test_the_folders_on_the_way_to_git_s_files_cannot_be_moved_aside(
    manager: ProcessManager, workspace: Path, tmp_path: Path
) -> None:
    """A read-only file in a writable folder: moving the folder aside and making a new
    one would leave a writable file at the path git reads. The folders on the way are
    mount points, which cannot be renamed or removed; they stay writable. A file where
    a folder of the way should be is bound too (it cannot be replaced by a folder), and
    the sandbox still runs commands."""
    pwned = tmp_path / "pwned"
    git = ["git", "-C", str(workspace), "config"]
    subprocess.run([*git, "--add", "include.path", "../conf/deep/x.cfg"], check=True)
    subprocess.run([*git, "--add", "include.path", "../blocked/y.cfg"], check=True)
    subprocess.run([*git, "core.hooksPath", "tools/hooks"], check=True)
    (workspace / "conf" / "deep").mkdir(parents=True)
    (workspace / "tools" / "hooks").mkdir(parents=True)
    (workspace / "blocked").write_text("not a folder\n")
    payload = f"printf '[core]\\n\\tfsmonitor = touch {pwned}; false\\n'"
    attempts = [
        f"mv conf c2 && mkdir -p conf/deep && {payload} > conf/deep/x.cfg",
        f"mv conf/deep conf/d2 && mkdir conf/deep && {payload} > conf/deep/x.cfg",
        f"rm -rf conf; mkdir -p conf/deep && {payload} > conf/deep/x.cfg",
        "mv tools t2 && mkdir -p tools/hooks && echo 'touch pwned' > tools/hooks/pre-commit",
        f"rm -f blocked && mkdir blocked && {payload} > blocked/y.cfg",
    ]
    for command in attempts:
        result = run(manager, workspace, command)
        assert result.status == "error", f"{command}: {result.text}"
    assert (workspace / "conf" / "deep" / "x.cfg").read_text() == ""
    assert (workspace / "blocked").read_text() == "not a folder\n"
    assert not (workspace / "tools" / "hooks" / "pre-commit").exists()
    for ok in ("echo a > conf/note && mkdir conf/deep/sub", "echo b > tools/readme"):
        assert run(manager, workspace, ok).status == "success", ok
    subprocess.run(["git", "-C", str(workspace), "status"], check=True, capture_output=True)
    assert not pwned.exists()


def test_a_nested_repository_cannot_be_moved_aside_and_made_again(
    manager: ProcessManager, workspace: Path
) -> None:
    """The user's `git status` in `libs/dep` reads `libs/dep/.git/config`: moving `libs`
    aside and making a new `.git` there would plant one. Folders holding no protected
    entry still move."""
    subprocess.run(["git", "init", "-q", str(workspace / "libs" / "dep")], check=True)
    before = (workspace / "libs" / "dep" / ".git" / "config").read_bytes()
    (workspace / "docs" / "old").mkdir(parents=True)
    plant = "mkdir -p libs/dep/.git && echo '[core] fsmonitor = touch pwned' > libs/dep/.git/config"
    for move in ("mv libs l2", "mv libs/dep libs/d2", "rm -rf libs"):
        result = run(manager, workspace, f"{move} && {plant}")
        assert result.status == "error", f"{move}: {result.text}"
    assert (workspace / "libs" / "dep" / ".git" / "config").read_bytes() == before
    assert run(manager, workspace, "mv docs/old docs/new && mv docs d2").status == "success"


def test_an_include_into_another_root_is_read_only_there(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(
        ["git", "-C", str(workspace), "config", "include.path", str(other / "x.cfg")], check=True
    )
    command = ["bash", "-c", f"echo '[core]' > {other / 'x.cfg'}"]
    argv = wrap_argv(command, "workspace-write", workspace, extra_roots=[other])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "Read-only file system" in done.stderr
    assert (other / "x.cfg").read_text() == ""  # made, empty, to be bound


# --- reads --------------------------------------------------------------------------------


SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- very secret"


@pytest.mark.parametrize("home_in_workspace", [True, False])
def test_credential_folders_are_unreadable(
    manager: ProcessManager,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    home_in_workspace: bool,
) -> None:
    """With the workspace as the home folder (the masks are mounted over a writable
    workspace) and with a home beside it."""
    home = workspace if home_in_workspace else tmp_path / "home-beside"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SECRET)
    (home / ".config" / "codecoder").mkdir(parents=True)
    (home / ".config" / "codecoder" / "config.toml").write_text("# " + SECRET)
    (home / ".netrc").write_text(SECRET)
    result = run(
        manager,
        workspace,
        "cat ~/.ssh/id_ed25519; ls ~/.ssh; cat ~/.config/codecoder/config.toml; cat ~/.netrc; "
        "grep -r BEGIN ~/.ssh; true",
    )
    assert SECRET not in result.text
    listing = run(manager, workspace, "ls -a ~/.ssh")
    assert "id_ed25519" not in listing.text
    if home_in_workspace:
        assert "Permission denied" in listing.text
        denied = run(manager, workspace, f"cat {home}/.ssh/id_ed25519")
        assert "[sandbox: credential folders" in denied.text


# --- network ------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that answers each connection with b"hello"."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.sendall(b"hello")

    thread = threading.Thread(target=serve, name="listener")
    thread.start()
    yield port
    stop.set()
    thread.join()
    server.close()


CONNECT = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5);"
    ' print(s.recv(5).decode())"'
)


def test_the_network_is_off_by_default_and_on_when_allowed(
    manager: ProcessManager, workspace: Path, listener: int
) -> None:
    command = CONNECT.format(port=listener)
    off = run(manager, workspace, command)
    assert off.status == "error"
    assert "hello" not in off.text
    assert "[sandbox: commands have their own localhost" in off.text  # the host's server
    on = run(manager, workspace, command, network=True)
    assert on.status == "success", on.text
    assert lines(on)[0] == "hello"
    unconfined = run(manager, workspace, command, mode=None)
    assert lines(unconfined)[0] == "hello"


def test_network_allow_gives_the_network_to_matching_commands_only(
    manager: ProcessManager, workspace: Path, listener: int
) -> None:
    command = CONNECT.format(port=listener)
    allowed = {command}

    def network_for(line: str, cwd: Path) -> bool:
        return line in allowed

    on = run(manager, workspace, command, network_for=network_for)
    assert lines(on)[0] == "hello"
    other = run(manager, workspace, "true; " + command, network_for=network_for)
    assert "hello" not in other.text


@pytest.mark.skipif(not os.access("/usr/bin/curl", os.X_OK), reason="curl is not installed")
def test_curl_fails_with_the_network_off(
    manager: ProcessManager, workspace: Path, listener: int
) -> None:
    command = f"curl -sS --max-time 5 telnet://127.0.0.1:{listener} </dev/null"
    off = run(manager, workspace, command)
    assert off.status == "error"
    assert "hello" not in off.text
    on = run(manager, workspace, command, network=True)
    assert "hello" in on.text


# --- processes ----------------------------------------------------------------------------


def test_an_escaped_daemon_dies_with_the_command(manager: ProcessManager, workspace: Path) -> None:
    """setsid, nohup, every descriptor closed and the environment cleared, so that the
    process manager's marker cannot find it: unconfined it survives the command (the
    known limit in tools/process.py); confined, the pid namespace ends it."""
    tag = uuid.uuid4().hex
    command = (
        f"setsid env -i nohup bash -c 'exec -a daemon-{tag} sleep 1000' "
        "</dev/null >/dev/null 2>&1 & sleep 0.3; echo started"
    )
    unconfined = run(manager, workspace, command, mode=None)
    escaped = _running(f"daemon-{tag}")
    try:
        assert unconfined.status == "success"
        assert escaped, "the daemon should outlive an unconfined command"
    finally:
        for pid in escaped:
            kill(pid)
        _wait_gone(escaped)
        manager.reap_orphans()
    tag = uuid.uuid4().hex
    confined = run(manager, workspace, command.replace("daemon-", f"daemon-{tag}-"))
    survivors = _running(f"daemon-{tag}-")
    for pid in survivors:  # a failure leaves nothing running either
        kill(pid)
    _wait_gone(survivors)
    manager.reap_orphans()
    assert confined.status == "success", confined.text
    assert survivors == []


def _running(name: str) -> list[int]:
    return [pid for pid in pids() if name.encode() in read(pid, "cmdline") and alive(pid)]


def _wait_gone(killed: list[int]) -> None:
    for pid in killed:
        wait_exit(pid)


CASES = [
    "printf 'a\\nb'; echo err >&2; exit 7",
    'pwd; echo "$HOME" | wc -c; seq 1 20000 | tail -n 2',
    "ls README.md; cat README.md; git status --short | wc -l",
    "exit 0",
    "python3 -c 'import sys; sys.stdout.write(\"x\" * 100000)'",
]


@pytest.mark.parametrize("command", CASES)
def test_an_allowed_commands_output_and_exit_code_are_unchanged(
    manager: ProcessManager, workspace: Path, command: str
) -> None:
    plain = manager.run(command, cwd=workspace, timeout=60, cancel=CancelToken())
    sandbox = Sandbox("workspace-write")
    confined = manager.run(
        command,
        cwd=workspace,
        timeout=60,
        cancel=CancelToken(),
        wrap=sandbox.wrapper(sandbox.confine(workspace), workspace),
    )
    sandbox.close()
    assert (confined.returncode, confined.output) == (plain.returncode, plain.output)
    assert confined.total_bytes == plain.total_bytes


def test_read_only_mode_writes_nothing_but_tmp(manager: ProcessManager, workspace: Path) -> None:
    result = run(manager, workspace, "cat README.md && echo t > /tmp/t && cat /tmp/t", "read-only")
    assert result.status == "success", result.text
    assert lines(result)[:2] == ["hello", "t"]
    refused = run(manager, workspace, "echo x > new.txt", "read-only")
    assert refused.status == "error"
    assert not (workspace / "new.txt").exists()
    assert "only /tmp (read-only mode)" in refused.text
