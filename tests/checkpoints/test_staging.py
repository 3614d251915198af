"""A snapshot stages the work tree in one walk (`ObjectStore.stage`: the listing of what
changed, then `git update-index` of exactly that) and keeps what `git add --all` kept,
through the real git: deleted files, symlinks, executable bits, a file that became a
folder and back, odd names, stat-only changes, nested repositories, a file gone between
the listing and the staging; and a snapshot right after another stages nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codecoder.checkpoints.objects import ObjectStore
from tests.checkpoints.helpers import call, git_on_path, logged, logging_git, tree, turn, undo

pytestmark = pytest.mark.timeout(180)

ODD = os.fsdecode(b"odd \xff\tname\nwith a newline")


def nested_repository(folder: Path, *, commit: bool) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1"}
    folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=folder, env=env, check=True)
    (folder / "inner.txt").write_text("inner\n")
    if commit:
        who = ["-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(["git", *who, "add", "inner.txt"], cwd=folder, env=env, check=True)
        subprocess.run(["git", *who, "commit", "-qm", "m"], cwd=folder, env=env, check=True)


def a_work_tree(ws: Path) -> None:
    """Every kind of entry `git add --all` kept."""
    ws.mkdir()
    (ws / "plain.txt").write_text("plain\n")
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    (ws / "tool.sh").chmod(0o755)
    (ws / "dir").mkdir()
    (ws / "dir" / "in.txt").write_text("in\n")
    (ws / "link").symlink_to("plain.txt")
    (ws / "dangling").symlink_to("nowhere")
    (ws / "dirlink").symlink_to("dir", target_is_directory=True)
    (ws / ODD).write_text("odd\n")
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "ignored.log").write_text("never kept\n")
    nested_repository(ws / "repo", commit=True)


def staged(objects: ObjectStore) -> str:
    """Our index, as `git ls-files -s` says it (modes, blobs, names)."""
    return objects.git("ls-files", "-s", "-z").stdout.decode(errors="surrogateescape")


def as_git_add_stages(objects: ObjectStore, scratch: Path) -> str:
    """What `git add --all` puts into a fresh index of the same store."""
    index = scratch / "reference-index"
    index.unlink(missing_ok=True)
    objects.git("add", "--all", "--", ".", index=index)
    return objects.git("ls-files", "-s", "-z", index=index).stdout.decode(errors="surrogateescape")


def test_stage_keeps_what_git_add_kept_through_every_kind_of_change(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a_work_tree(ws)
    objects = ObjectStore(ws, tmp_path / "store")
    objects.stage()
    assert staged(objects) == as_git_add_stages(objects, tmp_path)
    assert "160000" in staged(objects) and "ignored.log" not in staged(objects)
    before = objects.tree_of(objects.index_now())
    (ws / "plain.txt").write_text("changed\n")
    (ws / "tool.sh").chmod(0o644)  # the executable bit alone
    (ws / "dir" / "in.txt").unlink()
    (ws / "dir").rmdir()
    (ws / "dir").write_text("a file where the folder was\n")
    (ws / "dirlink").unlink()
    (ws / "dirlink").mkdir()  # a folder where the link was
    (ws / "dirlink" / "x.txt").write_text("x\n")
    (ws / "link").unlink()
    (ws / "link").symlink_to("tool.sh")
    (ws / ODD).unlink()
    (ws / "new.txt").write_text("new\n")
    changed, lost = objects.changes_since(before)
    assert staged(objects) == as_git_add_stages(objects, tmp_path)
    assert lost == []
    found = {path: (was, now) for path, was, now in changed}
    assert sorted(found) == sorted(
        ["plain.txt", "tool.sh", "dir", "dir/in.txt", "dirlink", "dirlink/x.txt", "link", ODD,
         "new.txt"]
    )  # fmt: skip
    assert found["tool.sh"][0] and found["tool.sh"][0].mode == "100755"
    assert found["tool.sh"][1] and found["tool.sh"][1].mode == "100644"
    assert found["dirlink"] == (found["dirlink"][0], None)
    assert found[ODD][1] is None and found["dir/in.txt"][1] is None


def test_a_snapshot_right_after_another_stages_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listed, so no update-index; a file touched without a change is staged
    once (its new stat is taken) and not listed again, where `ls-files --modified` never
    listed it and so compared its bytes at every snapshot."""
    ws = tmp_path / "ws"
    a_work_tree(ws)
    objects = ObjectStore(ws, tmp_path / "store", max_file=1 << 20)
    objects.stage()
    log = logging_git(tmp_path, monkeypatch)
    assert objects.stage() == []
    assert logged(log) == ["diff-files", "ls-files"]
    tree_before = objects.tree_of(objects.index_now())
    os.utime(ws / "plain.txt", ns=(1, 1))
    os.utime(ws / ODD, ns=(1, 1))
    assert objects.git("diff-files", "-z", "--name-only").stdout != b""
    log.unlink()
    assert objects.changes_since(tree_before) == ([], [])
    assert logged(log) == ["diff-files", "ls-files", "update-index", "diff-index"]
    assert objects.git("diff-files", "-z", "--name-only").stdout == b""
    log.unlink()
    objects.stage()
    assert logged(log) == ["diff-files", "ls-files"]


def test_a_file_gone_between_the_listing_and_the_staging_is_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kept.txt").write_text("kept\n")
    (ws / "tracked.txt").write_text("tracked\n")
    objects = ObjectStore(ws, tmp_path / "store")
    before = objects.tree_of(objects.index_now())
    (ws / "kept.txt").write_text("changed\n")
    (ws / "tracked.txt").write_text("changed, then gone\n")
    (ws / "new.txt").write_text("listed, then gone\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "deep.txt").write_text("its folder goes\n")
    gone = "rm -rf tracked.txt new.txt sub"
    git_on_path(tmp_path / "bin", monkeypatch, f'[ "$1" = update-index ] && {gone}\n')
    changed, _ = objects.changes_since(before)
    after = {path: now for path, _, now in changed}
    assert sorted(after) == ["kept.txt", "tracked.txt"]
    assert after["tracked.txt"] is None and after["kept.txt"] is not None


def test_nested_repositories_are_their_commit_and_none_runs_a_git_of_ours(
    tmp_path: Path,
) -> None:
    """One with a commit is a gitlink, as `git add --all` kept it; one without is left
    out (`git add --all` failed the whole snapshot). No git of ours runs inside either:
    `git add --all` ran `git status` there, under that repository's config, whose clean
    filter then ran."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "top.txt").write_text("top\n")
    nested_repository(ws / "with", commit=True)
    nested_repository(ws / "empty", commit=False)
    mark = tmp_path / "filter-ran"
    for repo in ("with", "empty"):
        with (ws / repo / ".git" / "config").open("a") as config:
            config.write(f'[filter "evil"]\n\tclean = "touch {mark}; cat"\n')
        (ws / repo / ".git" / "info").mkdir(exist_ok=True)
        (ws / repo / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    objects = ObjectStore(ws, tmp_path / "store")
    objects.stage()
    entries = staged(objects)
    assert "160000" in entries and "\twith\0" in entries
    assert "empty" not in entries and "\ttop.txt\0" in entries
    for _ in range(2):  # the gitlink is compared again; its work tree is never looked into
        os.utime(ws / "with" / "inner.txt", ns=(1, 1))
        objects.stage()
    assert not mark.exists()
    (ws / "empty" / "inner.txt").write_text("committed now\n")
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", *who, "-C", str(ws / "empty"), "add", "."], check=True)
    subprocess.run(["git", *who, "-C", str(ws / "empty"), "commit", "-qm", "m"], check=True)
    mark.unlink(missing_ok=True)  # that commit ran the filter: the test's own git
    objects.stage()
    assert "\tempty\0" in staged(objects)  # with a commit, it is kept from then on
    assert not mark.exists()


def test_a_file_over_max_file_with_a_newline_in_its_name_is_held_back(tmp_path: Path) -> None:
    """Its name cannot be a line of our `info/exclude`: it is left out of the staging
    instead, at every snapshot (git add staged it, since nothing excluded it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("small\n")
    objects = ObjectStore(ws, tmp_path / "store", max_file=100)
    before = objects.tree_of(objects.index_now())
    (ws / "big\nname.bin").write_bytes(b"x" * 1000)
    (ws / "small.txt").write_bytes(b"y" * 1000)  # a kept file that grows over the limit
    changed, lost = objects.changes_since(before)
    assert [path for path, _, _ in lost] == ["big\nname.bin", "small.txt"]
    assert changed == []
    assert "name.bin" not in staged(objects) and "small.txt" not in staged(objects)
    assert "name.bin" not in (objects.dir / "info" / "exclude").read_text()
    assert objects.stage() == []  # held back: neither staged nor said again
    assert "name.bin" not in staged(objects)


def test_undo_restores_a_deleted_file_and_one_gone_while_the_snapshot_staged_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `codecoder exec` and `codecoder undo`: the command deletes one file and
    changes another, which something else deletes while the snapshot after the command
    stages it; both are back after the undo."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "deleted.txt").write_text("deleted by the command\n")
    (ws / "vanishing.txt").write_text("changed, then gone\n")
    (ws / "link").symlink_to("deleted.txt")
    flag = ws / "vanish.flag"  # made by the command: in the workspace, which it may write
    gone = f"rm -f {flag} {ws / 'vanishing.txt'}"
    git_on_path(
        tmp_path / "bin", monkeypatch, f'[ "$1" = update-index ] && [ -e {flag} ] && {gone}\n'
    )
    before = tree(ws)
    command = "rm deleted.txt && echo more >> vanishing.txt && touch vanish.flag"
    turn(ws, call("run_command", command=command))
    assert not (ws / "deleted.txt").exists() and not (ws / "vanishing.txt").exists()
    done = undo(ws)
    assert done.returncode == 0, done.stderr
    assert tree(ws) == before
