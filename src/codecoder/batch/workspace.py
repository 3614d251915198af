"""A task's workspace: a fresh clone of its repository, and at the end the patch of what
changed in it (docs/batch.md, "Where a task runs").

The repository may be hostile, and so may be what the agent leaves in the clone. The git
commands here run unconfined, as the user, so none of them may take orders from either:

- `git clone --no-local`: even for a local path the objects come through git's pack
  protocol into a new object store. A local clone would hardlink or copy the source's
  object files (and its `objects/info/alternates`, which can name any folder), so the
  clone would share files with the source or read objects from where the source says.
  The clone's git dir is its own: no worktree of the source, no shared `.git`.
- No hooks run: `core.hooksPath=/dev/null` on every command, and the clone is made with
  an empty template (`--template=`). The source's own hooks are never copied by a clone
  anyway; this keeps the user's global and template hooks (`post-checkout`) out of a
  batch too, and a clone has ~15 files fewer to write and remove. `core.fsmonitor=false`,
  so no config file names a program for git to start. `protocol.ext.allow=never`, whatever
  the user's config says (tasks.py refuses `transport::address` already), and `--`
  before the repository, so no value is read as an option. No submodule is fetched (no
  `--recurse-submodules`).
- The source's config is read only by `git upload-pack`, which ignores the settings that
  could run a program from a repository's own config (`uploadpack.packObjectsHook`).
- The diff never reads the clone's `.git`: the agent ran there and, unsandboxed, could
  have written `.git/config` (a `filter.x.clean` program runs on `git add`, a
  `diff.external` on `git diff`). It is made in a git dir of ours (`hostgit.shadow`), created
  after the run beside the clone by hand (`HEAD`, `refs/`, `objects/`: the layout git
  requires, and no process to start), whose objects are the clone's
  (`objects/info/alternates`) and which has no config, with neither the user's system
  nor global config read (`hostgit.environment`): `GIT_DIR=ours GIT_WORK_TREE=clone`,
  read the starting commit into a private index, `add -A` (new untracked files
  included; `.gitignore` files are data and are honoured, the clone's
  `.git/info/exclude` is not read), and
  `diff --cached --binary --no-ext-diff --no-textconv` against the starting commit.
- Variables that point git at another repository (`GIT_DIR`, `GIT_WORK_TREE`,
  `GIT_INDEX_FILE`, …, set when `codecoder batch` runs inside a git hook) are dropped, and
  `GIT_TERMINAL_PROMPT=0`: a URL that needs a password fails instead of waiting.

Each git command is a child process in a process group of its own: a Ctrl+C at the
terminal reaches the batch, which decides what stops, not the clone in flight.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

from codecoder import hostgit
from codecoder.boundary import host_program

SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "protocol.ext.allow=never",
    "advice.detachedHead=false",
    "init.defaultBranch=main",
)
_LOCATION_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_QUARANTINE_PATH",
    }
)
ERROR_CHARS = 500
"""The end of git's stderr kept in an error message."""


class GitError(Exception):
    """A git command failed; the message is git's own last words."""


def git_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: ours) without the variables that point git elsewhere."""
    env = {k: v for k, v in (os.environ if base is None else base).items()}
    for name in _LOCATION_VARS:
        env.pop(name, None)
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def git(args: list[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> bytes:
    """Run one git command hardened as the module says; its stdout, or GitError."""
    config = [word for pair in SAFE_CONFIG for word in ("-c", pair)]
    found = hostgit.program(cwd) if cwd is not None else host_program("git", ())
    if found is None:
        raise GitError("git: not found on PATH (outside the task's workspace)")
    try:
        done = subprocess.run(
            [found, *config, *args],
            cwd=cwd,
            env=env if env is not None else git_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            process_group=0,
            check=False,
        )
    except OSError as exc:  # no git at all
        raise GitError(f"git: {exc.strerror or exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        raise GitError(f"git {args[0]}: {said[-ERROR_CHARS:] or f'exit code {done.returncode}'}")
    return done.stdout


def clone(repo: str, ref: str | None, dest: Path) -> str:
    """Clone `repo` into `dest` (which must not exist) at `ref` (default: its HEAD) and
    return the starting commit's id."""
    command = ["clone", "--quiet", "--no-local", "--template="]
    if ref is None:
        git([*command, "--", repo, str(dest)])
        return head(dest)
    git([*command, "--no-checkout", "--", repo, str(dest)])
    commit = _resolve(dest, ref)
    git(["checkout", "--quiet", "--detach", commit, "--"], cwd=dest)
    return commit


def head(workspace: Path) -> str:
    return git(["rev-parse", "--verify", "HEAD^{commit}"], cwd=workspace).decode().strip()


def _resolve(workspace: Path, ref: str) -> str:
    """A commit, tag or branch of the source: after a clone its branches are
    `origin/NAME`, so a branch name is tried there second."""
    for candidate in (ref, f"origin/{ref}"):
        try:
            out = git(
                ["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], cwd=workspace
            )
        except GitError:
            continue
        return out.decode().strip()
    raise GitError(f"git checkout: the repository has no ref {ref!r}")


def diff(workspace: Path, base: str, scratch: Path) -> str:
    """The patch from commit `base` to the files in `workspace` now, new untracked files
    included, made in a git dir of ours at `scratch` (which must not exist)."""
    hostgit.shadow(scratch, objects=workspace / ".git" / "objects", head=base)
    env = hostgit.environment() | {
        "GIT_DIR": str(scratch),
        "GIT_WORK_TREE": str(workspace),
        "GIT_INDEX_FILE": str(scratch / "batch-index"),
    }
    git(["read-tree", base], cwd=workspace, env=env)
    git(["add", "--all", "--", "."], cwd=workspace, env=env)
    patch = git(
        ["diff", "--cached", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", base],
        cwd=workspace,
        env=env,
    )
    return patch.decode(errors="replace")


def remove_tree(path: Path) -> None:
    """Delete a task's scratch folder, also where the run took the write bit off a
    folder (`chmod -w`) inside it."""

    def retry(function: object, name: str, _exc: object) -> None:
        parent = os.path.dirname(name)
        try:
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, stat.S_IRWXU)
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)
