"""Clones and diffs against a hostile repository: what git runs, what the clone shares
with its source, and what the diff is."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codecoder.batch.workspace import GitError, clone, diff, remove_tree
from tests.batch.helpers import git, make_repo

pytestmark = pytest.mark.timeout(60)


def _hook(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)


def test_cloning_runs_no_hook_and_no_program_of_the_sources_config(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = make_repo(
        tmp_path / "source", {"app.py": "X = 1\n", ".gitattributes": "* filter=evil\n"}
    )
    head = git(source, "rev-parse", "HEAD")
    for name in ("post-checkout", "post-merge", "reference-transaction", "pre-upload"):
        _hook(source / ".git" / "hooks" / name, marker)
    _hook(tmp_path / "elsewhere" / "post-checkout", marker)
    (source / ".git" / "config").write_text(
        (source / ".git" / "config").read_text()
        + f"[core]\n\thooksPath = {tmp_path / 'elsewhere'}\n\tfsmonitor = touch {marker}; false\n"
        + f'[uploadpack]\n\tpackObjectsHook = "touch {marker}; false"\n'
        + f'[filter "evil"]\n\tsmudge = "touch {marker}; cat"\n'
    )
    base = clone(str(source), None, tmp_path / "clone")
    assert base == head
    assert (tmp_path / "clone" / "app.py").read_text() == "X = 1\n"
    assert not marker.exists()
    assert not (tmp_path / "clone" / ".git" / "hooks").exists()  # an empty template


def test_the_users_own_hooks_do_not_run_in_a_batch(tmp_path: Path) -> None:
    """Global hooks (core.hooksPath, template hooks) are the user's, but a batch of a
    hundred clones should not run them a hundred times."""
    marker = tmp_path / "ran"
    _hook(tmp_path / "global-hooks" / "post-checkout", marker)
    _hook(tmp_path / "template" / "hooks" / "post-checkout", marker)
    Path(os.environ["HOME"], ".gitconfig").write_text(
        f"[core]\n\thooksPath = {tmp_path / 'global-hooks'}\n"
        f"[init]\n\ttemplateDir = {tmp_path / 'template'}\n"
    )
    source = make_repo(tmp_path / "source")
    git(tmp_path, "clone", "-q", str(source), "plain")
    assert marker.exists()  # the control: a plain clone runs them
    marker.unlink()
    clone(str(source), None, tmp_path / "clone")
    clone(str(source), "main", tmp_path / "clone2")
    assert not marker.exists()


def test_a_clone_shares_no_file_with_its_source(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "source")
    other = make_repo(tmp_path / "other")
    (source / ".git" / "objects" / "info" / "alternates").write_text(
        f"{other / '.git' / 'objects'}\n"
    )
    clone(str(source), None, tmp_path / "clone")
    git_dir = tmp_path / "clone" / ".git"
    assert git_dir.is_dir()  # not a worktree's `gitdir:` file
    assert not (git_dir / "objects" / "info" / "alternates").exists()
    source_inodes = {
        p.stat().st_ino for p in (source / ".git" / "objects").rglob("*") if p.is_file()
    }
    clone_inodes = {p.stat().st_ino for p in (git_dir / "objects").rglob("*") if p.is_file()}
    assert clone_inodes and not clone_inodes & source_inodes  # nothing hardlinked
    common = git(tmp_path / "clone", "rev-parse", "--path-format=absolute", "--git-common-dir")
    assert Path(common) == git_dir


@pytest.mark.parametrize(
    "repo",
    ["ext::sh -c touch% {marker}", "--upload-pack=touch {marker}", "-u touch {marker}"],
)
def test_a_repository_cannot_be_a_command_or_an_option(tmp_path: Path, repo: str) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(GitError):
        clone(repo.format(marker=marker), None, tmp_path / "clone")
    assert not marker.exists()


def test_submodules_are_not_fetched(tmp_path: Path) -> None:
    inner = make_repo(tmp_path / "inner", {"secret.txt": "inner\n"})
    source = make_repo(tmp_path / "source")
    git(source, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(source, "commit", "-q", "-m", "submodule")
    clone(str(source), None, tmp_path / "clone")
    assert (tmp_path / "clone" / ".gitmodules").exists()
    assert list((tmp_path / "clone" / "sub").iterdir()) == []


def test_a_ref_can_be_a_branch_a_tag_or_a_commit(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "source")
    first = git(source, "rev-parse", "HEAD")
    git(source, "tag", "v1")
    git(source, "checkout", "-q", "-b", "topic")
    (source / "topic.txt").write_text("t\n")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "topic")
    topic = git(source, "rev-parse", "HEAD")
    git(source, "checkout", "-q", "main")
    assert clone(str(source), "topic", tmp_path / "a") == topic
    assert (tmp_path / "a" / "topic.txt").exists()
    assert clone(str(source), "v1", tmp_path / "b") == first
    assert clone(str(source), topic[:10], tmp_path / "c") == topic
    with pytest.raises(GitError, match="no ref 'nope'"):
        clone(str(source), "nope", tmp_path / "d")


def test_the_diff_has_every_change_and_new_untracked_files(tmp_path: Path) -> None:
    source = make_repo(
        tmp_path / "source", {"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "*.log\n"}
    )
    work = tmp_path / "clone"
    base = clone(str(source), None, work)
    (work / "a.txt").write_text("A\n")
    (work / "b.txt").unlink()
    (work / "new" / "deep").mkdir(parents=True)
    (work / "new" / "deep" / "c.txt").write_text("c\n")
    (work / "blob.bin").write_bytes(bytes(range(256)))
    (work / "debug.log").write_text("ignored\n")
    git(work, "commit", "-q", "-am", "the agent committed part of it")
    patch = diff(work, base, tmp_path / "scratch.git")
    assert "-a\n+A" in patch
    assert "deleted file mode" in patch and "b.txt" in patch
    assert "new/deep/c.txt" in patch and "+c" in patch
    assert "GIT binary patch" in patch and "blob.bin" in patch
    assert "debug.log" not in patch
    checked = tmp_path / "check"
    clone(str(source), None, checked)
    (checked / "patch.diff").write_text(patch)
    git(checked, "apply", "--index", "patch.diff")
    assert (checked / "blob.bin").read_bytes() == bytes(range(256))
    assert (checked / "new" / "deep" / "c.txt").read_text() == "c\n"


def test_the_diff_takes_no_orders_from_the_clones_git_dir(tmp_path: Path) -> None:
    """What the agent may write into the clone's .git (unsandboxed) runs nothing when the
    batch makes the diff, as the user, outside any sandbox."""
    marker = tmp_path / "ran"
    source = make_repo(tmp_path / "source")
    work = tmp_path / "clone"
    base = clone(str(source), None, work)
    (work / ".gitattributes").write_text("* filter=evil diff=evil\n")
    for key, value in (
        ("filter.evil.clean", f"touch {marker}; cat"),
        ("filter.evil.process", f"touch {marker}"),
        ("diff.evil.textconv", f"touch {marker}; cat"),
        ("diff.external", f"touch {marker}"),
        ("core.fsmonitor", f"touch {marker}; false"),
        ("core.hooksPath", str(tmp_path / "hooks")),
    ):
        git(work, "config", key, value)
    _hook(tmp_path / "hooks" / "post-index-change", marker)
    (work / ".git" / "info").mkdir()
    (work / ".git" / "info" / "exclude").write_text("hidden.txt\n")
    (work / "hidden.txt").write_text("the agent wrote this\n")
    (work / "app.py").write_text("X = 3\n")
    patch = diff(work, base, tmp_path / "scratch.git")
    assert not marker.exists()
    assert "+X = 3" in patch and "hidden.txt" in patch  # the clone's exclude is not read


def test_remove_tree_removes_what_the_task_made_read_only(tmp_path: Path) -> None:
    root = tmp_path / "task"
    locked = root / "a" / "b"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    (root / "a").chmod(stat.S_IRUSR | stat.S_IXUSR)
    remove_tree(root)
    assert not root.exists()
