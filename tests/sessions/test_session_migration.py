"""Migration from the first schema, written here by hand exactly as version 1 shipped."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from codecoder.kernel.codec import encode
from codecoder.kernel.messages import user_message
from codecoder.sessions import SchemaTooNew, SessionStore
from codecoder.sessions.schema import CURRENT_VERSION
from tests.sessions.session_samples import every_kind

# A frozen copy: if the module's V1_DDL ever drifted, this test would still migrate what
# version 1 really wrote.
V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, cwd TEXT NOT NULL, model TEXT NOT NULL, title TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, parent_id TEXT, fork_message_id INTEGER,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0, cost REAL, turns INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);
CREATE INDEX sessions_by_age ON sessions (updated_at);
CREATE TABLE messages (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL, status TEXT NOT NULL,
    body BLOB NOT NULL, created_at REAL NOT NULL
);
CREATE UNIQUE INDEX messages_by_session ON messages (session_id, seq);
PRAGMA user_version = 1;
"""
PARENT = "a" * 32
CHILD = "b" * 32


def write_v1(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1)
    conn.execute(
        "INSERT INTO sessions VALUES (?, '/proj', 'openai/gpt-5', 'Fix the parser', 10.0, 20.0,"
        " NULL, NULL, 1000, 200, 300, 0.5, 3)",
        (PARENT,),
    )
    conn.execute(
        "INSERT INTO sessions VALUES (?, '/proj', 'openai/gpt-5', 'Fix the parser', 30.0, 40.0,"
        " ?, 1, 0, 0, 0, NULL, 1)",
        (CHILD, PARENT),
    )
    for message in every_kind():
        conn.execute(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, 15.0)",
            (PARENT, message.id, message.role, message.status, encode(message)),
        )
    conn.commit()
    conn.close()


def test_a_version_1_database_migrates_with_its_data(db: Path) -> None:
    db.parent.mkdir(parents=True)
    write_v1(db)
    with SessionStore(db) as store:
        parent, child = store.get(PARENT), store.get(CHILD)
        assert store.load_messages(PARENT) == every_kind()
        assert (parent.title, parent.turns, parent.cost) == ("Fix the parser", 3, 0.5)
        assert (parent.input_tokens, parent.output_tokens, parent.cached_tokens) == (1000, 200, 300)
        assert (parent.created_at, parent.updated_at) == (10.0, 20.0)
        assert (child.parent_id, child.fork_message_id, child.cost) == (PARENT, 1, None)
        # what version 2 adds, backfilled from version 1's rows
        assert (parent.message_count, child.message_count) == (5, 0)
        assert parent.reasoning_tokens == 0
        assert store.token_estimate(PARENT) == sum((len(encode(m)) + 3) // 4 for m in every_kind())
        store.append(PARENT, user_message("after the migration", id=5))
        assert store.get(PARENT).message_count == 6
        assert [s.id for s in store.list_sessions("/proj")] == [PARENT, CHILD]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION == 6
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_a_newer_schema_is_refused_untouched(db: Path) -> None:
    db.parent.mkdir(parents=True)
    write_v1(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with SessionStore(db) as store, pytest.raises(SchemaTooNew, match="schema 99"):
        store.list_sessions()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 99
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 5
    conn.close()


OPEN_AND_WRITE = """
import os, sys, time
from codecoder.kernel.messages import user_message
from codecoder.sessions.store import SessionStore
db, n, go = sys.argv[1:]
print("ready", flush=True)
while not os.path.exists(go):  # every child leaves within a fraction of a millisecond
    time.sleep(0.0001)
with SessionStore(db) as store:
    session = store.create("/", "m/m")
    store.append(session, user_message("from " + n, id=1))
"""


def open_together(db: Path, count: int) -> list[tuple[int, str]]:
    """Start `count` children, let each import, then release them all at once."""
    go = db.parent / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AND_WRITE, str(db), str(n), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        go.touch()
        return [(child.wait(timeout=30), child.communicate()[1]) for child in children]
    finally:
        for child in children:
            child.kill()
            child.communicate()


def race(tmp_path: Path, trials: int, count: int) -> None:
    for trial in range(trials):
        db = tmp_path / f"race{trial}" / "sessions.sqlite3"
        db.parent.mkdir()
        outcomes = open_together(db, count)
        assert all(code == 0 for code, _ in outcomes), outcomes
        with SessionStore(db) as store:
            sessions = store.list_sessions()
            titles = sorted(s.title or "" for s in sessions)
            assert titles == [f"from {n}" for n in range(count)]
            assert all(s.message_count == 1 for s in sessions)


def test_processes_opening_a_fresh_file_together_migrate_once(tmp_path: Path) -> None:
    """All at once on a new file: the switch to WAL and the migration race."""
    race(tmp_path, trials=1, count=6)


def open_and_write_forked(db: str, n: int, barrier: Barrier) -> None:
    """A forked child: an exception here prints its traceback and exits with code 1."""
    barrier.wait(timeout=30)
    with SessionStore(db) as store:
        session = store.create("/", "m/m")
        store.append(session, user_message(f"from {n}", id=1))


@pytest.mark.slow
def test_forked_processes_released_by_a_barrier_never_meet_a_lock(tmp_path: Path) -> None:
    """The tightest race: forked children, already initialised, released together. Without
    the wait in `_enable_wal`, about one child in sixty failed with "database is locked"
    (SQLite answers a racing switch to WAL with SQLITE_BUSY without calling its handler)."""
    fork = multiprocessing.get_context("fork")
    for trial in range(100):
        db = tmp_path / f"fork{trial}.sqlite3"
        barrier = fork.Barrier(6)
        children = [
            fork.Process(target=open_and_write_forked, args=(str(db), n, barrier)) for n in range(6)
        ]
        for child in children:
            child.start()
        for child in children:
            child.join(timeout=60)
        assert [child.exitcode for child in children] == [0] * 6
