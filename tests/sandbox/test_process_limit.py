"""A confined command's process limit (`[sandbox] max_processes`, sandbox/limits.py), for
real: a fork bomb stops at the limit (its peak is counted from outside, every process of
it is gone afterwards, the result says why), a command that starts a few dozen processes
is untouched. As root the limit is a cgroup; a child run as `nobody` (setpriv) takes the
other way, RLIMIT_NPROC inside bwrap's user namespace. Skipped, with the reason, where
bwrap or the limit cannot work."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ToolContext
from codecoder.sandbox.limits import GROUP_PREFIX, Groups, ProcessLimit
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand
from tests.procfs import pids, read, stat_of, wait_exit

from .conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(120)]

LIMIT = 64
SLACK = 8
"""Processes of ours around the limited ones: the watchdog, bwrap outside its namespace,
the setpriv child and its interpreter."""
BOMB = ":(){ :|:& };:; sleep 2"
"""The classic bash fork bomb; its shell stays a while, so that the command is still running
when the bomb meets the limit (it then ends, and the leftovers are killed)."""
NOTE = f"[sandbox: a command may have at most {LIMIT} processes and threads at once"
ROOT = Path(__file__).resolve().parents[2]


def descendants(*, zombies: bool = True) -> set[int]:
    """Our processes now, by parent links in /proc (`zombies`: dead ones not yet reaped
    too, as they still hold a pid)."""
    parents: dict[int, int] = {}
    for pid in pids():
        if (found := stat_of(pid)) is not None and (zombies or found[0] != "Z"):
            parents[pid] = found[1]
    ours, mine = {os.getpid()}, set()
    grew = True
    while grew:
        found = {pid for pid, ppid in parents.items() if ppid in ours and pid not in ours}
        grew = bool(found)
        ours |= found
        mine |= found
    return mine


def reap_ours() -> None:
    """Reap zombies whose parent is this process: orphans of a command reparented to it
    (the process managers make it a subreaper) that no ProcessManager here waits for."""
    for pid in pids():
        if (found := stat_of(pid)) is not None and found[0] == "Z" and found[1] == os.getpid():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


class Peak:
    """The most processes of ours seen at once while it runs (a thread scanning /proc)."""

    def __init__(self) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="peak")

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            self.most = max(self.most, len(descendants()))

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def limited() -> Iterator[tuple[Sandbox, ProcessLimit]]:
    sandbox = Sandbox("workspace-write", max_processes=LIMIT)
    limit = sandbox.process_limit()
    if not isinstance(limit, ProcessLimit):
        sandbox.close()
        pytest.skip(f"no process limit here: {limit.reason}")
    yield sandbox, limit
    sandbox.close()  # after the tests' commands, whose processes are reaped
    if limit.how == "cgroup":
        left = [name for name in os.listdir(limit.tool) if name.startswith(GROUP_PREFIX)]
        assert not [name for name in left if name.startswith(f"{GROUP_PREFIX}{os.getpid()}-")]


@pytest.fixture
def nobodys() -> Iterator[Path]:
    """A folder `nobody` can reach (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="codecoder-limit-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(manager: ProcessManager, sandbox: Sandbox, workspace: Path, command: str) -> str:
    ctx = ToolContext("call_1", CancelToken(), workspace, lambda _: None)
    return RunCommand(manager, sandbox).run({"command": command, "timeout": 60}, ctx).text


def test_a_fork_bomb_stops_at_the_limit_and_leaves_nothing(
    manager: ProcessManager, workspace: Path, limited: tuple[Sandbox, ProcessLimit]
) -> None:
    sandbox, limit = limited
    run(manager, sandbox, workspace, "true")  # the watchdog is up: part of the baseline
    before = descendants(zombies=False)
    with Peak() as peak:
        text = run(manager, sandbox, workspace, BOMB)
    assert NOTE in text, text[-2000:]
    assert peak.most <= len(before) + LIMIT + SLACK, (limit.how, peak.most)
    for pid in descendants() - before:  # SIGKILLed, some may still be on their way out
        assert wait_exit(pid), (pid, read(pid, "cmdline"), stat_of(pid))
    after = descendants(zombies=False)  # every process of the bomb has died
    assert after == before, [(pid, read(pid, "cmdline"), stat_of(pid)) for pid in after - before]
    manager.reap_orphans()  # and none is left a zombie of ours
    assert not descendants() - before
    if limit.how == "cgroup":  # its cgroup is removed
        assert not [
            n for n in os.listdir(limit.tool) if n.startswith(f"{GROUP_PREFIX}{os.getpid()}-")
        ]


def test_a_few_dozen_processes_are_fine(
    manager: ProcessManager, workspace: Path, limited: tuple[Sandbox, ProcessLimit]
) -> None:
    sandbox, _ = limited
    command = "for i in $(seq 40); do sleep 0.3 & done; wait; echo all done"
    text = run(manager, sandbox, workspace, command)
    assert text.endswith("all done\n[exit code 0]"), text
    assert "Resource temporarily unavailable" not in text


@pytest.mark.skipif(os.geteuid() != 0, reason="the tests above run as a user already")
def test_as_another_user_the_limit_is_an_rlimit_in_the_namespace(nobodys: Path) -> None:
    """RLIMIT_NPROC counts that user's processes of the sandbox's namespace only: 100
    processes of the same user outside it do not count against the 64."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    tmp_path, workspace = nobodys, nobodys / "ws"
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for path in (tmp_path, *workspace.rglob("*"), workspace):
        os.lchown(path, 65534, 65534)
    as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    outside = subprocess.Popen(
        [*as_nobody, "sh", "-c", "for i in $(seq 100); do sleep 60 & done; wait"],
        start_new_session=True,
    )

    def child(command: str) -> dict[str, str]:
        argv = [*as_nobody, sys.executable, "-m", "tests.sandbox.confined_child"]
        done = subprocess.run(
            [*argv, str(workspace), str(LIMIT), command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    try:
        few = child("for i in $(seq 40); do sleep 0.3 & done; wait; echo all done")
        if few["how"] is None:
            pytest.skip("no process limit for another user here")
        assert few["how"] == "rlimit"
        assert few["text"].endswith("all done\n[exit code 0]"), few["text"]
        baseline = descendants(zombies=False)
        with Peak() as peak:
            bomb = child(BOMB)
        assert NOTE in bomb["text"], bomb["text"][-2000:]
        assert peak.most <= len(baseline) + LIMIT + SLACK, peak.most
        for pid in descendants() - baseline:
            assert wait_exit(pid), (pid, read(pid, "cmdline"), stat_of(pid))
        assert descendants(zombies=False) == baseline
        reap_ours()  # the child's orphans, reparented to us as it ended
        assert not descendants() - baseline
    finally:
        os.killpg(outside.pid, 9)
        outside.wait()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash to stand in for /bin/sh")
def test_the_shell_that_enters_a_cgroup_obeys_no_environment(tmp_path: Path) -> None:
    """The shell runs on the host, outside bwrap, with the environment of what it starts
    (a project's MCP server names its own). Where /bin/sh is bash, an exported function
    (`BASH_FUNC_echo%%`) replaced its `echo`, and SHELLOPTS=xtrace ran a PS4: a program
    the repository named ran unconfined. Run here with bash in /bin/sh's place."""
    limit = ProcessLimit(64, "cgroup", str(tmp_path))  # a folder stands in for the hierarchy
    groups = Groups()
    argv, group = groups.enter(limit, ["/bin/true"])
    assert group is not None and argv[0] == "/bin/sh"
    pwned = tmp_path / "pwned"
    hostile = {
        "PATH": "/usr/bin:/bin",
        "BASH_FUNC_echo%%": f"() {{ builtin echo $$ > {pwned}; }}",
        "SHELLOPTS": "xtrace",
        "PS4": f"$(touch {pwned})",
        "BASH_ENV": str(tmp_path / "env.sh"),
    }
    (tmp_path / "env.sh").write_text(f"touch {pwned}\n")
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(["sh", *argv[1:]], executable=bash, env=hostile, timeout=10, check=False)
    assert done.returncode == 0
    assert not pwned.exists()
    assert (Path(group) / "cgroup.procs").read_text().strip().isdigit()
