"""The checkpoint store against a hostile repository (issue 18): whatever the work tree,
its `.git` and the user's git setup say, snapshots run no program of theirs, keep every
file's exact bytes, and never touch the user's `.git` or index."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from codecoder.checkpoints.objects import ObjectStore
from tests.checkpoints.helpers import call, tree, turn, undo

pytestmark = pytest.mark.timeout(180)


def git(workspace: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "-C", str(workspace), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout


def digest_of(folder: Path) -> str:
    """Every file's path and bytes under `folder`."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def hostile(tmp_path: Path, isolated_home: Path) -> tuple[Path, Path]:
    """A repository that tries every way git could run its code or change bytes: filter
    drivers, fsmonitor, hooks, include, a textconv, eol/ident/encoding attributes, in
    the repository's config and in the user's (whose HOME is the test's); and a nested
    "repository" whose .git file points outside. Returns (workspace, marker folder)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    evil = f"sh -c 'touch {marks}/$0' "
    config = (
        f'[filter "evil"]\n\tclean = {evil}clean\n\tsmudge = {evil}smudge\n\trequired = true\n'
        f"[core]\n\tfsmonitor = {marks}/../fsmonitor.sh\n\thooksPath = {ws}/.githooks\n"
        f"\tattributesFile = {ws}/.attrs\n\texcludesFile = {ws}/.excl\n"
        f'[diff "evil"]\n\ttextconv = {evil}textconv\n'
        f"[include]\n\tpath = {ws}/included.cfg\n"
    )
    with (ws / ".git" / "config").open("a") as out:
        out.write(config)
    (tmp_path / "fsmonitor.sh").write_text(f"#!/bin/sh\ntouch {marks}/fsmonitor\n")
    (tmp_path / "fsmonitor.sh").chmod(0o755)
    (isolated_home / ".gitconfig").write_text(config)
    xdg_git = Path(os.environ["XDG_CONFIG_HOME"]) / "git"
    xdg_git.mkdir(parents=True, exist_ok=True)
    (xdg_git / "config").write_text(config)
    (xdg_git / "attributes").write_text("* filter=evil\n")
    for hook in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        for folder in (ws / ".git" / "hooks", ws / ".githooks"):
            folder.mkdir(exist_ok=True)
            (folder / hook).write_text(f"#!/bin/sh\ntouch {marks}/hook-{hook}\n")
            (folder / hook).chmod(0o755)
    (ws / "included.cfg").write_text(f'[filter "evil"]\n\tclean = {evil}included\n')
    (ws / ".attrs").write_text("* filter=evil\n")
    (ws / ".gitattributes").write_text(
        "* filter=evil diff=evil text eol=crlf ident\n*.txt working-tree-encoding=UTF-16\n"
    )
    (ws / "crlf.c").write_bytes(b"int x;\r\n/* $Id$ */\r\n")
    (ws / "lf.txt").write_bytes(b"plain\nlines\n")
    (ws / "bin.dat").write_bytes(bytes(range(256)))
    nested = ws / "vendor"
    nested.mkdir()
    (nested / ".git").write_text(f"gitdir: {tmp_path}/elsewhere\n")
    (nested / "lib.txt").write_text("vendored\n")
    # The user's index stays empty: the prompt's `git status` (context/fragments.py) runs
    # in the repository with its config, and would run a clean filter on a tracked file
    # that changed; that exposure is the prompt's, documented there, not the store's.
    return ws, marks


def test_snapshots_run_nothing_of_the_repository_and_keep_exact_bytes(
    hostile: tuple[Path, Path],
) -> None:
    ws, marks = hostile
    dot_git = digest_of(ws / ".git")
    (ws / "change.sh").write_text(
        "printf 'int y;\\r\\n' >> crlf.c && printf 'changed\\n' > lf.txt && "
        "head -c 100 /dev/zero >> bin.dat && echo new > vendor/lib.txt\n"
    )
    before = tree(ws)
    turn(ws, call("run_command", command="sh change.sh"))
    assert sorted(p.name for p in marks.iterdir()) == []  # no filter, hook, fsmonitor ran
    assert not (ws / ".git" / "index").exists()  # no index made for the user
    assert digest_of(ws / ".git") == dot_git  # nothing of their .git changed
    done = undo(ws)
    assert done.returncode == 0, done.stderr
    assert tree(ws) == before  # every byte back: CRLF, $Id$, binary, the UTF-8 text
    assert sorted(p.name for p in marks.iterdir()) == []


def test_the_store_is_private_and_its_git_sees_no_config_but_ours(
    hostile: tuple[Path, Path],
) -> None:
    ws, marks = hostile
    store = ObjectStore(ws)
    store.ensure()
    assert not store.dir.is_relative_to(ws) and store.dir.stat().st_mode & 0o077 == 0
    assert not (store.dir / "hooks").exists()  # made by hand: no templates
    listed = store.git("config", "--list", "--show-origin").stdout.decode()
    origins = {line.split("\t", 1)[0] for line in listed.splitlines()}
    assert origins <= {"command line:", f"file:{store.dir}/config"}
    assert "evil" not in listed
    attrs = store.git("check-attr", "-a", "crlf.c", "lf.txt").stdout.decode()
    assert "filter: unset" in attrs and "text: unset" in attrs and "ident: unset" in attrs
    assert "working-tree-encoding: unset" in attrs and "eol: unset" in attrs
    tree_id = store.tree_of(store.index_now())
    entries = store.git("ls-tree", "-r", tree_id).stdout.decode()
    assert "vendor\n" not in entries or "160000" not in entries.split("vendor")[0][-60:]
    names = {line.split("\t")[1] for line in entries.splitlines()}
    assert ".git" not in {n.split("/")[0] for n in names}
    assert store.read_blob(_blob(entries, "crlf.c")) == (ws / "crlf.c").read_bytes()
    assert sorted(p.name for p in marks.iterdir()) == []


def _blob(entries: str, name: str) -> str:
    for line in entries.splitlines():
        meta, path = line.split("\t")
        if path == name:
            return meta.split()[2]
    raise AssertionError(f"{name} not in the snapshot")


def test_a_checkpoint_never_writes_outside_the_workspace_through_a_planted_link(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious\n")
    turn(ws, call("write_file", path="dir/victim.txt", content="agent\n"))
    # the folder the turn wrote into becomes a link to a folder outside the workspace
    (ws / "dir" / "victim.txt").unlink()
    (ws / "dir").rmdir()
    (ws / "dir").symlink_to(outside, target_is_directory=True)
    refused = undo(ws, "--force")
    assert refused.returncode == 1 and "dir is now a symlink" in refused.stderr
    assert (outside / "victim.txt").read_text() == "precious\n"
