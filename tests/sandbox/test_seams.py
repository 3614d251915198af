"""The seams between the sandbox and the host (issue 25), tried as a hostile model would,
through `codecoder exec` where the seam lies between sessions: what a confined command
writes must never run unconfined later, in CodeCoder's own git, in the next session, or
in the user's git.

- A protected entry that does not exist yet (`.codecoder/`, `.git` at the top, a hooks
  folder git's config names) cannot be made by a confined command.
- CodeCoder's own git (the system prompt's changed-files line) runs no program that a
  repository's config names, in any approval mode.
- The model's git that only reads runs read-only where commands are otherwise
  unconfined, so a filter or diff driver it meets cannot write or reach the host.
- Host sockets under /run and the host's SysV IPC are out of a confined command's reach.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.context.fragments import git_summary
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ToolContext
from codecoder.permissions.writes import reads_repository
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand

from .conftest import needs_bwrap
from .test_cli import FULL_AUTO, call, finished, run_exec
from .test_confined import run

pytestmark = pytest.mark.timeout(120)

CLI = [sys.executable, "-m", "codecoder"]


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


def trust(ws: Path) -> None:
    done = subprocess.run([*CLI, "trust", str(ws)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A trusted folder that is no git repository and has no `.codecoder/`."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / "app.py").write_text("print('hi')\n")
    trust(root)
    return root


# --- 1. protected entries that do not exist yet ------------------------------------------


def held_or_gone(place: Path) -> bool:
    """An empty folder held in place of a missing entry during a session is removed when
    the session ends: either way, nothing a command wrote is there."""
    if not os.path.lexists(place):
        return True
    return place.is_dir() and not place.is_symlink() and os.listdir(place) == []


GRANT = '[permissions]\nallow = ["unsandboxed"]\n'

PLANTS = {
    "a script": (
        "import os\nos.makedirs('.codecoder', exist_ok=True)\n"
        f"open('.codecoder/config.toml', 'w').write({GRANT!r})\n"
    ),
    "the local config": (
        "import os\nos.makedirs('.codecoder', exist_ok=True)\n"
        f"open('.codecoder/config.local.toml', 'w').write({GRANT!r})\n"
    ),
    "a folder moved into place": (
        "import os\nos.makedirs('x', exist_ok=True)\n"
        f"open('x/config.toml', 'w').write({GRANT!r})\nos.rename('x', '.codecoder')\n"
    ),
    "a link to a folder": (
        "import os\nos.makedirs('x', exist_ok=True)\n"
        f"open('x/config.toml', 'w').write({GRANT!r})\nos.symlink('x', '.codecoder')\n"
    ),
}


@needs_bwrap
@pytest.mark.parametrize("how", sorted(PLANTS))
def test_a_confined_command_cannot_give_the_next_session_rights(
    tmp_path: Path, plain: Path, how: str
) -> None:
    """The issue's example and its kin: a script (which the permission check cannot
    read) makes `.codecoder/` with `allow = ["unsandboxed"]`; the next headless session
    must still deny an escalation."""
    (plain / "p.py").write_text(PLANTS[how])
    code, lines, err = run_exec(
        tmp_path, plain, [[call("run_command", command="python3 p.py")], ["done"]], *FULL_AUTO
    )
    assert code == 0, err
    assert finished(lines)[0]["status"] == "error"
    assert held_or_gone(plain / ".codecoder")
    pwned = tmp_path / "pwned"
    escalate = call("run_command", command=f"touch {pwned}", sandbox=False)
    code, lines, err = run_exec(tmp_path, plain, [[escalate], ["done"]], *FULL_AUTO)
    assert code == 0, err
    assert finished(lines)[0]["status"] == "error"
    assert not pwned.exists()


GIT_PLANTS = {
    "git init": "git init -q .",
    "a .git file": "git init -q --bare elsewhere && echo 'gitdir: elsewhere' > .git",
    "a link": "git init -q --bare elsewhere && ln -s elsewhere .git",
    "a folder moved into place": "git init -q made && mv made/.git .git",
}


@needs_bwrap
@pytest.mark.parametrize("how", sorted(GIT_PLANTS))
def test_a_confined_command_cannot_make_the_top_a_repository(
    tmp_path: Path, plain: Path, how: str
) -> None:
    """Through a script, which the permission check cannot read: only the sandbox
    stands in the way."""
    (plain / "plant.sh").write_text(f"set -e\n{GIT_PLANTS[how]}\n")
    code, lines, err = run_exec(
        tmp_path, plain, [[call("run_command", command="sh plant.sh")], ["done"]], *FULL_AUTO
    )
    assert code == 0, err
    assert finished(lines)[0]["status"] == "error", finished(lines)[0]["content"]
    assert held_or_gone(plain / ".git")
    # an empty .git is no repository: git still says so, and the user can still make one
    outside = subprocess.run(["git", "-C", str(plain), "status"], capture_output=True, check=False)
    assert outside.returncode != 0
    git(plain, "init", "-q")


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside /tmp, which confined commands see as it is (the host's /tmp they
    do not: a repository above a workspace there would be hidden)."""
    folder = Path(tempfile.mkdtemp(prefix="codecoder-seams-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
def test_an_empty_git_placeholder_leaves_a_repository_above_in_charge(
    tmp_path: Path, outside_tmp: Path
) -> None:
    """A workspace below the top of a repository: the placeholder `.git` made there is
    skipped by git, so the model's git and the prompt still see the repository."""
    top = outside_tmp / "repo"
    ws = top / "sub"
    ws.mkdir(parents=True)
    git(top, "init", "-q")
    replies = [
        [call("run_command", command="echo x > f.txt")],
        [call("run_command", command="git status --porcelain")],
        ["done"],
    ]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO)
    assert code == 0, err
    made, status = finished(lines)
    assert made["status"] == "success", made["content"]
    assert held_or_gone(ws / ".git")
    assert status["status"] == "success", status["content"]
    assert "sub/" in status["content"]
    assert git_summary(ws).startswith(f"yes, root {top}")


@needs_bwrap
def test_a_missing_hooks_folder_cannot_be_made(tmp_path: Path) -> None:
    """`core.hooksPath = .husky` with no `.husky/` yet: a confined command must not make
    the folder and plant a hook the user's next commit runs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "core.hooksPath", ".husky")
    pwned = tmp_path / "pwned"
    plant = (
        f"mkdir -p .husky && printf '#!/bin/sh\\ntouch {pwned}\\n' > .husky/pre-commit"
        " && chmod +x .husky/pre-commit"
    )
    (ws / "plant.sh").write_text(plant + "\n")
    code, lines, err = run_exec(
        tmp_path, ws, [[call("run_command", command="sh plant.sh")], ["done"]], *FULL_AUTO
    )
    assert code == 0, err
    assert finished(lines)[0]["status"] == "error"
    assert os.listdir(ws / ".husky") == []
    git(ws, "add", "plant.sh")
    git(ws, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "x")
    assert not pwned.exists()


# --- 2. CodeCoder's own git ----------------------------------------------------------------


def hostile_repository(ws: Path, pwned: Path) -> None:
    """A repository whose config names a program for every way `git status` could run
    one: a clean filter and a process filter on tracked files that changed (stat-dirty,
    and the same content with a new mtime), fsmonitor, a pager, an include that adds
    another filter, and a submodule whose own config has a filter: what an earlier
    unconfined command could have left."""
    mark = shlex.quote(str(pwned))
    commit = ("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "x")
    git(ws, "init", "-q")
    sub = ws / "vendor"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / ".gitattributes").write_text("* filter=evil\n")
    (sub / "s.txt").write_text("s\n")
    git(sub, "add", "-A")
    git(sub, *commit)
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n*.p filter=proc\n")
    (ws / "f.txt").write_text("one\n")
    (ws / "g.p").write_text("one\n")
    (ws / "inc.cfg").write_text(f'[filter "evil"]\n\tprocess = touch {mark}-inc\n')
    git(ws, "add", "-A")
    git(ws, *commit)
    git(sub, "config", "filter.evil.clean", f"touch {mark}-sub; cat")
    git(ws, "config", "filter.evil.clean", f"touch {mark}-clean; cat")
    git(ws, "config", "filter.evil.smudge", f"touch {mark}-smudge; cat")
    git(ws, "config", "filter.proc.process", f"touch {mark}-process")
    git(ws, "config", "diff.evil.textconv", f"touch {mark}-textconv; cat")
    git(ws, "config", "diff.external", f"touch {mark}-external")
    git(ws, "config", "core.fsmonitor", f"touch {mark}-fsmonitor; false")
    git(ws, "config", "core.pager", f"touch {mark}-pager; cat")
    git(ws, "config", "include.path", "../inc.cfg")
    (ws / "f.txt").write_text("two\n")  # stat-dirty: status hashes it through the filter
    os.utime(ws / "g.p", (1, 1))  # same content, other mtime: hashed to be sure
    (sub / "s.txt").write_text("changed\n")  # a dirty submodule: status would look inside


def ran(pwned: Path) -> list[str]:
    return sorted(p.name for p in pwned.parent.glob(f"{pwned.name}*"))


@pytest.mark.parametrize("approval", ["ask", "auto-edit", "full-auto", "never-ask"])
def test_the_prompt_s_git_runs_nothing_a_repository_names(tmp_path: Path, approval: str) -> None:
    """The issue's example: the next session's system prompt (its changed-files line)
    ran the repository's filter on the host, with no tool call, in every mode."""
    ws = tmp_path / "ws"
    ws.mkdir()
    pwned = tmp_path / "pwned"
    hostile_repository(ws, pwned)
    code, _, err = run_exec(tmp_path, ws, [["done"]], "--approval", approval)
    assert code == 0, err
    prompt = subprocess.run(
        [*CLI, "prompt", "-C", str(ws)], capture_output=True, text=True, timeout=60, check=False
    )
    assert prompt.returncode == 0, prompt.stderr
    assert ran(pwned) == []
    assert "uncommitted changes in 1 file" in prompt.stdout  # f.txt
    # the same repository does run them for a git that reads its config: the test's
    # hostile setup is real
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True, check=False)
    assert ran(pwned)


# --- 3. the model's git that only reads ------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize(
    "command",
    ["git status", "git diff", "git diff --stat | head -5", "git log -p -1", "git show HEAD"],
)
def test_the_model_s_reading_git_is_confined_read_only_where_commands_are_not(
    tmp_path: Path, command: str
) -> None:
    """In `never-ask` (commands unconfined by default), a line on the read-only list that
    runs git is allowed unasked; the repository's programs it meets must not write the
    host: it runs read-only."""
    ws = tmp_path / "ws"
    ws.mkdir()
    pwned = tmp_path / "pwned"
    hostile_repository(ws, pwned)
    replies = [[call("run_command", command=command)], ["done"]]
    code, lines, err = run_exec(tmp_path, ws, replies, "--approval", "never-ask")
    assert code == 0, err
    assert ran(pwned) == [], finished(lines)[0]["content"]


@pytest.mark.parametrize(
    ("line", "confined"),
    [
        ("git status", True),
        ("command git status", True),
        ("time git log -p", True),
        ("git -C sub diff | head -5", True),
        ("cat a.txt | grep x && git show HEAD", True),
        ("ls -la", False),  # no git: runs as other commands do
        ("git commit -m x", False),  # writes: asked about, not read-only
    ],
)
def test_which_lines_count_as_reading_with_git(line: str, confined: bool) -> None:
    assert reads_repository(line, Path(".")) is confined


@needs_bwrap
def test_sandbox_off_asked_for_leaves_the_model_s_git_unconfined(tmp_path: Path) -> None:
    """`--sandbox off` is the user's word: the same line runs on the host, and the
    repository's filter with it (which also shows the hostile setup is live)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    pwned = tmp_path / "pwned"
    hostile_repository(ws, pwned)
    replies = [[call("run_command", command="git status")], ["done"]]
    code, _, err = run_exec(tmp_path, ws, replies, "--approval", "never-ask", "--sandbox", "off")
    assert code == 0, err
    assert ran(pwned)


# --- 6. host sockets and IPC ---------------------------------------------------------------


@needs_bwrap
def test_host_socket_folders_are_masked(manager: ProcessManager, workspace: Path) -> None:
    present = [p for p in ("/run/user", "/run/dbus", "/run/postgresql") if os.path.isdir(p)]
    if not present:
        pytest.skip("none of /run/user, /run/dbus, /run/postgresql exists here")
    for folder in present:
        result = run(manager, workspace, f"ls {folder}")
        assert result.status == "error", f"{folder}: {result.text}"
        assert "Permission denied" in result.text, result.text


@needs_bwrap
@pytest.mark.skipif(shutil.which("ipcmk") is None, reason="util-linux's ipcmk is not here")
def test_the_host_s_sysv_ipc_is_not_shared(manager: ProcessManager, workspace: Path) -> None:
    made = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True, check=True)
    key = made.stdout.split()[-1]  # "Shared memory id: N"
    try:
        outside = subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True)
        assert f" {key} " in outside.stdout
        inside = run(manager, workspace, "ipcs -m")
        assert inside.status == "success", inside.text
        assert f" {key} " not in inside.text
    finally:
        subprocess.run(["ipcrm", "-m", key], check=False)


# --- programs a command puts on PATH -------------------------------------------------------


def planting_script(bin_dir: str, pwned: Path) -> str:
    """A shell script that puts in `bin_dir` (a folder of the workspace on PATH, as an
    activated `.venv/bin` is) a `bwrap` that runs what it is given unconfined, and a
    `git`, `rg` and `cat` that leave a mark and then do their work."""
    fake_bwrap = 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"'
    files = {"bwrap": f"touch {pwned}-bwrap\n{fake_bwrap}"}
    for name in ("git", "rg", "cat"):
        real = shutil.which(name) or f"/usr/bin/{name}"
        files[name] = f'touch {pwned}-{name}\nexec {real} "$@"'
    lines = [f"mkdir -p {bin_dir}"]
    for name, body in files.items():
        script = f"{shlex.quote('#!/bin/sh')} {shlex.quote(body)}"
        lines.append(f"printf '%s\\n' {script} > {bin_dir}/{name}")
        lines.append(f"chmod +x {bin_dir}/{name}")
    return "\n".join(lines) + "\n"


@needs_bwrap
def test_programs_on_a_path_inside_the_workspace_are_not_ours_to_run(
    tmp_path: Path, outside_tmp: Path
) -> None:
    """`.venv/bin` of the workspace is on PATH. A confined command plants a `bwrap`,
    `git`, `rg` and `cat` there: the next command of the same session is still confined
    by the real bwrap, the checkpoints' git is not the planted one, and the next session
    (prompt, grep, a `cat` allowed unasked as read-only) runs none of them."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "notes.txt").write_text("hello\n")
    pwned = tmp_path / "pwned"
    (ws / "plant.sh").write_text(planting_script(".venv/bin", pwned))
    outside = outside_tmp / "outside.txt"
    (ws / "escape.py").write_text(f"open({str(outside)!r}, 'w').write('x')\n")
    env = {**os.environ, "PATH": f"{ws / '.venv' / 'bin'}:{os.environ['PATH']}"}
    replies = [
        [call("run_command", command="sh plant.sh")],
        [call("run_command", command="python3 escape.py")],
        ["done"],
    ]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO, env=env)
    assert code == 0, err
    planted, escaped = finished(lines)
    assert planted["status"] == "success", planted["content"]
    assert (ws / ".venv" / "bin" / "bwrap").exists()
    assert escaped["status"] == "error", escaped["content"]
    assert not outside.exists()
    replies = [
        [call("run_command", command="cat notes.txt")],
        [call("grep", pattern="hello")],
        ["done"],
    ]
    code, lines, err = run_exec(tmp_path, ws, replies, "--approval", "never-ask", env=env)
    assert code == 0, err
    cat, grep = finished(lines)
    assert cat["status"] == "error" and "needs approval" in cat["error"]["message"], cat
    assert grep["status"] == "success" and "notes.txt" in grep["content"], grep
    assert ran(pwned) == []


@needs_bwrap
def test_a_hooks_folder_named_during_a_session_is_read_only_from_then_on(
    manager: ProcessManager, workspace: Path, tmp_path: Path
) -> None:
    """husky's `prepare` sets core.hooksPath in the middle of a session: the guards are
    read again when git's config changes, not once per process."""
    sandbox = Sandbox("workspace-write")
    tool = RunCommand(manager, sandbox)
    ctx = ToolContext("call_1", CancelToken(), workspace, lambda event: None)
    pwned = tmp_path / "pwned"
    try:
        first = tool.run({"command": "echo a > a.txt"}, ctx)
        assert first.status == "success", first.text
        git(workspace, "config", "core.hooksPath", ".githooks")  # on the host, as husky does
        (workspace / "plant.sh").write_text(
            f"mkdir -p .githooks && printf '#!/bin/sh\\ntouch {pwned}\\n' > .githooks/pre-commit"
            " && chmod +x .githooks/pre-commit\n"
        )
        planted = tool.run({"command": "sh plant.sh"}, ctx)
    finally:
        sandbox.close()
    assert planted.status == "error", planted.text
    git(workspace, "add", "a.txt")
    git(workspace, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "x")
    assert not pwned.exists()


@needs_bwrap
@pytest.mark.parametrize("name", [".codecoder", ".git"])
def test_a_dangling_link_at_the_top_is_held_at_its_target(
    manager: ProcessManager, tmp_path: Path, name: str
) -> None:
    """A repository may commit `.codecoder` (or `.git`) as a link to a folder that does
    not exist yet: a command must not make that folder and fill it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / name).symlink_to("held")
    (ws / "plant.sh").write_text("mkdir -p held && echo '[permissions]' > held/config.toml\n")
    result = run(manager, ws, "sh plant.sh")
    assert result.status == "error", result.text
    assert held_or_gone(ws / "held")


@needs_bwrap
def test_the_held_folders_are_removed_when_the_session_ends_if_still_empty(
    manager: ProcessManager, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox = Sandbox("workspace-write")
    tool = RunCommand(manager, sandbox)
    ctx = ToolContext("call_1", CancelToken(), ws, lambda event: None)
    try:
        made = tool.run({"command": "ls -a .git .codecoder > seen.txt"}, ctx)
        assert made.status == "success", made.text
        assert (ws / ".git").is_dir() and (ws / ".codecoder").is_dir()  # held meanwhile
        git(ws, "init", "-q")  # the user's own, on the host: that one stays
    finally:
        sandbox.close()
    assert not (ws / ".codecoder").exists()
    assert (ws / ".git" / "HEAD").is_file()


@needs_bwrap
@pytest.mark.parametrize(
    "plant",
    [
        "mkdir -p {folder} && echo '[permissions]' > {folder}/config.toml",
        "mv {parent} {parent}.old; mkdir -p {folder} && echo x > {folder}/config.toml",
        "rm -rf {parent}; mkdir -p {folder} && echo x > {folder}/config.toml",
    ],
    ids=["absent", "parent-moved", "parent-removed"],
)
@pytest.mark.parametrize("which", ["config", "data"])
def test_codecoder_s_own_folders_in_the_workspace_cannot_be_made_or_swapped(
    manager: ProcessManager, plant: str, which: str
) -> None:
    """The workspace is the home folder: CodeCoder's config (hooks, rules) and data
    (the approvals of hooks, servers and rules) lie in it. Absent, they are made and
    masked; present, their parents cannot be moved aside for a new one."""
    from codecoder import paths

    home = Path.home()
    folder = (paths.config_dir() if which == "config" else paths.data_dir()).relative_to(home)
    if "moved" in plant or "removed" in plant:
        (home / folder).mkdir(parents=True, exist_ok=True)
    (home / "plant.sh").write_text(plant.format(folder=folder, parent=folder.parts[0]) + "\n")
    result = run(manager, home, "sh plant.sh")
    assert result.status == "error", result.text
    assert not (home / folder / "config.toml").exists()
    assert (home / folder).is_dir()
