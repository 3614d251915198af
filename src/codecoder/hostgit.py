"""The git that CodeCoder runs by itself on the host, outside any sandbox, in repositories
whose files a confined command may have written.

Whatever a confined command can write is hostile input to every process started later
on the host. A repository's config (`.git/config` and what it includes) names programs
that git runs: clean, smudge and process filters (on any command that hashes a work tree
file: `status`, `diff-files`, `add`, even for a "racily clean" entry), diff drivers and
textconv, `core.fsmonitor`, `core.pager`, `core.editor`, `core.sshCommand`,
`credential.helper`, `gpg.program`, hooks. A command run in a folder that was not a
repository can `git init` one and write all of that. So every git process of ours takes
one of two routes, and no third:

- **Nothing can run.** `git rev-parse` and `git config` read config and refs and start
  no program whatever the config says (`locate` here, the sandbox's scan of git's hooks
  folders and includes in permissions/paths.py).
- **A git dir of ours** (`shadow`): for commands that look at the work tree. `GIT_DIR`
  is a folder we make, with no config but what we write (the object format), whose
  objects are the repository's (`objects/info/alternates`), its index read in place
  (`GIT_INDEX_FILE`, never written: optional locks off) and its `info/exclude` linked.
  The work tree's `.gitattributes` can still name a filter; no config of ours defines
  one, so git runs none. `GIT_CONFIG_NOSYSTEM` and `GIT_CONFIG_GLOBAL=/dev/null`: the
  user's own config is left out too, so the answer depends on nothing but the files.
  Used for the changed-files line of the system prompt and for `codecoder batch`'s diff.

The checkpoints' git (checkpoints/objects.py) is the second route by construction: its
store is its own git dir. The route of each process is listed in docs/sandbox.md, "What
runs outside the sandbox". A bwrap around each of these would cost ~6 ms a process.
The git itself is found on PATH outside the workspace (`program`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

STATUS_ARGS = ("status", "--porcelain", "-z", "--ignore-submodules=dirty")
"""`dirty`: a submodule's own work tree is not looked at (git would run `git status` in
it, under the submodule's config); a submodule whose commit changed still counts. `-z`:
paths as they are (no quoting), each ended by a NUL."""

ISOLATED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
}
"""No system or global config or attributes, no prompt for a password, no replace refs,
no optional lock: what every git process of ours that must not take orders from the
user's or a repository's setup runs with (the checkpoints' store too)."""

SHA256_CONFIG = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n"


class Repository(NamedTuple):
    """Where git keeps a work tree's repository, as `git rev-parse` found it."""

    top: Path
    git_dir: Path
    objects: Path
    index_file: Path
    exclude: Path
    head: str | None
    """The commit checked out; None on a branch with no commit yet."""


def repository_top(path: Path) -> Path | None:
    """The nearest folder at or above `path` that holds a `.git` (a folder, a file of a
    worktree or submodule, a link), found by looking, without running git. An empty
    `.git` folder does not count: git skips it, and it is what the sandbox holds in
    place of a missing one (sandbox/layout.py)."""
    for folder in (path, *path.parents):
        dot_git = folder / ".git"
        if os.path.lexists(dot_git) and not _empty_folder(dot_git):
            return folder
    return None


def _empty_folder(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:  # not a folder (a file, a link to one), or unreadable
        return False


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: ours) without any `GIT_*` variable (they point git at other
    folders, configs and programs), and with no system or global config, no prompt for
    a password, no pager, no replace refs, no optional lock."""
    env = {
        name: value
        for name, value in (os.environ if base is None else base).items()
        if not name.startswith("GIT_")
    }
    return env | ISOLATED | {"GIT_PAGER": "cat"}


def program(folder: Path) -> str | None:
    """The git to run for `folder`: found on PATH outside the folder and the repository
    that holds it (a command there may have put a `git` of its own in a `.venv/bin` on
    PATH: boundary.host_program)."""
    from codecoder.boundary import host_program

    top = repository_top(folder)
    return host_program("git", (folder,) if top is None else (folder, top))


def locate(folder: Path, git: str, *, timeout: float = 10.0) -> Repository | None:
    """The repository that holds `folder`, found by `git` (`program`'s), or None (not in
    one, git failed or was too slow)."""
    import subprocess

    args = ["rev-parse", "--show-toplevel", "--absolute-git-dir"]
    args += ["--git-path", "objects", "--git-path", "index", "--git-path", "info/exclude"]
    try:
        done = subprocess.run(
            [git, "-c", "safe.bareRepository=explicit", *args, "HEAD"],
            cwd=folder,
            env=environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.splitlines()
    if len(lines) != 6 or not lines[0]:  # a bare repository has no top: not ours to read
        return None
    top, git_dir, objects, index, exclude, head = lines
    known = all(c in "0123456789abcdef" for c in head) and len(head) in (40, 64)
    return Repository(
        Path(top),
        Path(git_dir),
        folder / objects,
        folder / index,
        folder / exclude,
        head if known else None,  # unborn: rev-parse printed the word HEAD and failed
    )


def shadow(
    folder: Path,
    *,
    objects: Path,
    head: str | None,
    exclude: Path | None = None,
    shared_from: Path | None = None,
) -> None:
    """Make `folder` (which must not exist) a git dir of ours (the module docstring says
    why): its objects are those in `objects`, HEAD is the commit `head` (None: a branch
    with no commit yet), `exclude` is linked as its `info/exclude`, and the shared part
    of a split index in `shared_from` (a repository's git dir) is linked too."""
    (folder / "objects" / "info").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "info").mkdir()
    (folder / "HEAD").write_text(f"{head}\n" if head else "ref: refs/heads/unborn\n")
    if head is not None and len(head) == 64:
        (folder / "config").write_text(SHA256_CONFIG)
    alternates = folder / "objects" / "info" / "alternates"
    alternates.write_text(f"{os.path.abspath(objects)}\n")
    if exclude is not None and exclude.is_file():
        (folder / "info" / "exclude").symlink_to(os.path.abspath(exclude))
    try:  # a split index names its shared part, which git looks for in GIT_DIR
        names = os.listdir(shared_from) if shared_from is not None else []
    except OSError:
        names = []
    for name in names:
        if name.startswith("sharedindex.") and shared_from is not None:
            (folder / name).symlink_to(shared_from / name)


def changed_files(folder: Path, *, timeout: float) -> list[str] | None:
    """The paths `git status --porcelain` lists for the repository that holds `folder`
    (relative to its top; a rename by its new name), through a git dir of ours; None
    when there is no repository, git is missing, fails or takes over `timeout` seconds
    (each of its two processes)."""
    import shutil
    import subprocess
    import tempfile

    git = program(folder)
    repository = locate(folder, git, timeout=timeout) if git is not None else None
    if repository is None or git is None:
        return None
    scratch = Path(tempfile.mkdtemp(prefix="codecoder-git-"))
    try:
        shadow(
            scratch / "git",
            objects=repository.objects,
            head=repository.head,
            exclude=repository.exclude,
            shared_from=repository.git_dir,
        )
        env = environment() | {
            "GIT_DIR": str(scratch / "git"),
            "GIT_WORK_TREE": str(repository.top),
            "GIT_INDEX_FILE": str(os.path.abspath(repository.index_file)),
        }
        done = subprocess.run(
            [git, *STATUS_ARGS],
            cwd=repository.top,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        return None
    return _status_paths(done.stdout)


def _status_paths(output: bytes) -> list[str]:
    """The paths of `git status --porcelain -z`: `XY path` entries, where a rename or
    copy (`R`, `C`) is followed by an entry holding its old path."""
    paths: list[str] = []
    entries = iter(output.split(b"\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        paths.append(os.fsdecode(entry[3:]))
        if b"R" in entry[:2] or b"C" in entry[:2]:
            next(entries, None)
    return paths
