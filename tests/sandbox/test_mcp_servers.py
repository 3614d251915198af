"""A project's MCP server runs in the sandbox (issue 25): the approval pins its command
line, not the script it runs, which a confined command can rewrite; the next session
starts the server by itself, with nobody asked. Tried through `codecoder exec` as the
hostile model would: a full-auto session's confined command rewrites the server's
script, and the next session must not run it on the host.

The server is a real stdio MCP server (the `mcp` SDK's MCPServer) run from the
workspace; its one tool writes the file it is given, so where it ran shows on disk. The
files it should not reach are in /var/tmp: under /tmp a confined process writes the
session's private /tmp, which would hide a refusal.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from codecoder.sandbox.bwrap import Confinement
from codecoder.sandbox.runtime import Sandbox

from .conftest import needs_bwrap
from .test_cli import FULL_AUTO, call, finished, run_exec
from .test_seams import CLI, trust

pytestmark = [pytest.mark.timeout(180), needs_bwrap]

SERVER = """\
from mcp.server.mcpserver import MCPServer

app = MCPServer("srv")


@app.tool()
def touch(path: str) -> str:
    \"\"\"Write the file at `path`.\"\"\"
    try:
        with open(path, "w") as out:
            out.write("x")
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return "written"


app.run()
"""


def codecoder(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, check=False)


def define(config: Path, *, origin_dir: Path, sandbox: bool | None = None) -> None:
    """`[mcp.servers.srv]` in `config`: this interpreter running srv.py of `origin_dir`
    (relative for a project's, as a repository would write it)."""
    config.parent.mkdir(parents=True, exist_ok=True)
    script = "srv.py" if config.parent.name == ".codecoder" else str(origin_dir / "srv.py")
    lines = ["[mcp.servers.srv]", f"command = {json.dumps(sys.executable)}"]
    lines.append(f"args = [{json.dumps(script)}]")
    if sandbox is not None:
        lines.append(f"sandbox = {str(sandbox).lower()}")
    with config.open("a") as out:
        out.write("\n".join(lines) + "\n")


def allow_its_tools() -> None:
    user = paths.config_dir() / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    with user.open("a") as out:
        out.write('[permissions]\nallow = ["mcp__srv__*"]\n')


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder of the host outside the workspace and outside /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="codecoder-test-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A trusted workspace whose approved project server runs its srv.py."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "srv.py").write_text(SERVER)
    define(root / ".codecoder" / "config.toml", origin_dir=root)
    trust(root)
    approved = codecoder("mcp", "approve", "srv", "-C", str(root))
    assert approved.returncode == 0, approved.stderr
    allow_its_tools()
    listed = codecoder("mcp", "list", "-C", str(root))  # its tools are offered from now on
    assert "srv (project)  ready" in listed.stdout, listed
    return root


def touch(path: Path) -> list[Any]:
    """A turn that calls the server's tool on `path`, then ends."""
    return [[call("mcp__srv__touch", path=str(path))], ["done"]]


def server_processes(workspace: Path) -> list[str]:
    """The host's processes that run this workspace's server (bwrap or python)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except OSError:  # gone since the listing
            continue
        if b"srv.py" in words and (str(workspace).encode() in b" ".join(words)):
            found.append(pid)
    return found


def test_a_server_script_a_confined_command_rewrote_does_not_run_on_the_host(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    """The issue's reproduction: a confined command rewrites srv.py to write a marker
    outside the workspace; the next session (not full-auto: its commands would run
    unconfined) starts the server, which must be confined and still serve."""
    marker = outside / "marker"
    plant = f"open({str(marker)!r}, 'w').write('pwned')\n"
    rewrite = f"src = open('srv.py').read()\nopen('srv.py', 'w').write({plant!r} + src)\n"
    (project / "rewrite.py").write_text(rewrite)
    code, lines, err = run_exec(
        tmp_path,
        project,
        [[call("run_command", command="python3 rewrite.py")], ["done"]],
        *FULL_AUTO,
    )
    assert code == 0, err
    assert finished(lines)[0]["status"] == "success", finished(lines)[0]["content"]
    assert "pwned" in (project / "srv.py").read_text()
    code, lines, err = run_exec(tmp_path, project, touch(project / "x.txt"))
    assert code == 0, err
    (result,) = finished(lines)
    assert result["status"] == "error"  # it ran the planted line, which failed
    assert "Read-only file system" in result["content"], result["content"]
    assert not marker.exists()


def test_a_confined_server_cannot_write_outside_and_mcp_list_says_so(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    inside = project / "made-by-server.txt"
    replies = [[call("mcp__srv__touch", path=str(p)) for p in (inside, outside / "x")], ["ok"]]
    code, lines, err = run_exec(tmp_path, project, replies)
    assert code == 0, err
    assert [(r["status"], r["content"]) for r in finished(lines)] == [
        ("success", "written"),
        ("success", "refused: Read-only file system"),
    ]
    assert inside.read_text() == "x"
    assert os.listdir(outside) == []
    assert server_processes(project) == []  # stopped with the session
    listed = codecoder("mcp", "list", "-C", str(project))
    assert listed.returncode == 0, listed.stderr
    assert "srv (project)  ready  stdio  in the sandbox (workspace-write)  " in listed.stdout
    assert server_processes(project) == []


def test_sandbox_off_asked_for_leaves_a_project_server_on_the_host(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    code, lines, err = run_exec(tmp_path, project, touch(outside / "x.txt"), "--sandbox", "off")
    assert code == 0, err
    assert finished(lines)[0]["content"] == "written"
    assert (outside / "x.txt").read_text() == "x"


def test_a_project_server_that_says_sandbox_false_does_not_run(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    config = project / ".codecoder" / "config.toml"
    config.write_text(config.read_text() + "sandbox = false\n")
    # approving it does not help: the definition is refused, not merely unapproved
    assert codecoder("mcp", "approve", "srv", "-C", str(project)).returncode == 0
    code, lines, err = run_exec(tmp_path, project, touch(outside / "x.txt"))
    assert code == 0, err
    assert finished(lines)[0]["status"] == "error"
    assert "MCP server srv not started: project server not run (sandbox = false" in err
    assert os.listdir(outside) == []
    listed = codecoder("mcp", "list", "-C", str(project)).stdout
    assert "srv (project)  not started" in listed
    assert "only your own config may run a server outside the sandbox" in listed


@pytest.mark.parametrize(
    ("sandbox", "where"),
    [(None, "on the host"), (False, "on the host"), (True, "in the sandbox (workspace-write)")],
)
def test_the_user_s_own_server_runs_on_the_host_unless_it_asks_for_the_sandbox(
    tmp_path: Path, outside: Path, sandbox: bool | None, where: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (outside / "srv.py").write_text(SERVER)  # not under /tmp: a confined one sees it
    define(paths.config_dir() / "config.toml", origin_dir=outside, sandbox=sandbox)
    allow_its_tools()
    listed = codecoder("mcp", "list", "-C", str(workspace)).stdout
    assert f"srv  ready  stdio  {where}  " in listed
    code, lines, err = run_exec(tmp_path, workspace, touch(outside / "x.txt"))
    assert code == 0, err
    assert finished(lines)[0]["status"] == "success"
    assert (outside / "x.txt").exists() == (sandbox is not True)


def test_an_unasked_program_is_confined_where_commands_are_not(tmp_path: Path) -> None:
    """`confine_started`: workspace-write where commands run unconfined by
    default, the session's own mode where they are confined, nothing with `off`."""
    line = "python3 srv.py"
    by_default = Sandbox(approval=lambda: "ask")
    assert by_default.confine(tmp_path, command=line) is None
    assert _mode(by_default.confine_started(tmp_path, command=line)) == "workspace-write"
    read_only = Sandbox("read-only")
    assert _mode(read_only.confine_started(tmp_path, command=line)) == "read-only"
    assert Sandbox("off").confine_started(tmp_path, command=line) is None
    for sandbox in (by_default, read_only):
        sandbox.close()


def _mode(confinement: Confinement | None) -> str | None:
    return None if confinement is None else confinement.mode
