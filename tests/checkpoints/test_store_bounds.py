"""The checkpoint store is bounded: what no checkpoint refers to is pruned at a session's
end, the oldest checkpoints go when it is over `[undo] max_store_mb`, a file over
`[undo] max_file_mb` is never kept (its checkpoint says so), and `codecoder doctor` says
how big the stores are (issue 32, item 3). Real turns, real git, the real store."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codecoder.checkpoints.objects import store_dir
from codecoder.sessions import SessionStore
from tests.checkpoints.helpers import CLI, call, tree, turn, undo
from tests.smalldisk import used as size_of

pytestmark = pytest.mark.timeout(180)

MB = 1 << 20


def random_file(name: str, size: int) -> str:
    """A command writing `size` random bytes (nothing for zlib to shrink) to `name`."""
    return f"python3 -c \"import os; open('{name}', 'wb').write(os.urandom({size}))\""


def settings(isolated_home: Path, text: str) -> None:
    config = isolated_home / ".config" / "codecoder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\n")
    return folder


def test_what_no_checkpoint_refers_to_is_pruned_and_the_rest_still_undoes(
    workspace: Path,
) -> None:
    turn(workspace, call("run_command", command="echo two >> notes.txt"))
    turn(
        workspace,
        call("run_command", command=random_file("scratch.bin", 20 * MB)),
        call("run_command", command="rm scratch.bin && echo three >> notes.txt"),
    )
    store = store_dir(workspace)
    assert size_of(store) < 2 * MB  # the 20 MB nothing refers to is gone
    assert not list(store.glob("objects/pack/tmp_*"))
    # both turns undo: the rows' objects and the index's were kept
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "notes.txt").read_text() == "one\n"
    # and the next command's "before" (the index's blob of notes.txt) is there too
    turn(workspace, call("run_command", command="echo four > notes.txt"), new=True)
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "notes.txt").read_text() == "one\n"


def test_over_max_store_mb_the_oldest_checkpoints_go(workspace: Path, isolated_home: Path) -> None:
    settings(isolated_home, "[undo]\nmax_store_mb = 3\n")
    for _ in range(3):  # each turn replaces data.bin: 1 MB that only checkpoints keep
        turn(workspace, call("run_command", command=random_file("data.bin", MB)))
    assert size_of(store_dir(workspace)) <= 3 * MB
    with SessionStore() as store:
        turns = sorted(row.turn for row in store.checkpoints(workspace=workspace))
    assert turns == [3]  # turns 1 and 2 are forgotten, the latest kept
    latest = (workspace / "data.bin").read_bytes()
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "data.bin").read_bytes() != latest  # turn 2's content is back
    assert undo(workspace).returncode == 1  # and nothing older


def test_a_file_over_max_file_mb_is_never_kept_and_its_checkpoint_says_so(
    workspace: Path, isolated_home: Path
) -> None:
    settings(isolated_home, "[undo]\nmax_file_mb = 1\n")
    turn(
        workspace,
        call("run_command", command=random_file("big.bin", 2 * MB) + " && echo two >> notes.txt"),
    )
    big = (workspace / "big.bin").read_bytes()
    assert size_of(store_dir(workspace)) < MB  # never read into the store
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "notes.txt").read_text() == "one\n"
    assert "not restored: big.bin: over [undo] max_file_mb (1 MB)" in done.stderr
    assert (workspace / "big.bin").read_bytes() == big  # left as it is
    assert undo(workspace, "--redo").returncode == 0
    # a later change of the held-back file, and a file tool on it, say so too
    grow = f"python3 -c \"open('big.bin', 'w').write('line\\n' * {3 * MB // 5})\""
    turn(workspace, call("run_command", command=grow))  # text: read_file shows it
    read_then_write = (
        call("read_file", path="big.bin"),
        call("write_file", path="big.bin", content="small now\n"),
    )
    turn(workspace, *read_then_write)  # write_file replaces only a file the session read
    before = tree(workspace)
    for _ in range(2):
        done = undo(workspace)
        assert done.returncode == 0, done.stderr
        assert "not restored: big.bin" in done.stderr
    assert tree(workspace) == before
    assert size_of(store_dir(workspace)) < MB


def test_doctor_says_how_big_the_stores_are(workspace: Path) -> None:
    turn(workspace, call("run_command", command=random_file("data.bin", 3 * MB)))
    result = subprocess.run(
        [*CLI, "doctor", "--timeout", "0.5"],
        cwd=workspace, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "OPENAI_API_KEY": ""},
    )  # fmt: skip
    line = next(x for x in result.stdout.splitlines() if " checkpoints " in x)
    assert "in 1 workspace store(s)" in line and "3.0 MB this folder's" in line
    assert "under 1024 MB ([undo] max_store_mb)" in line
