"""The store's schema and its migrations, versioned by `PRAGMA user_version`.

A database is never created at the current version directly: a fresh file runs every step
from 0, so the path an old database takes and the path a new one takes are the same code,
and the migration from the first schema is exercised on every first start.

Version 1 — sessions and messages, one JSON body per message.
Version 2 — per-message token estimates (`messages.tokens`, so compaction and resume can
size a history from the index alone, without decoding it), `sessions.message_count` (so a
listing does not count rows) and `sessions.reasoning_tokens` (Usage reports them).
Version 3 — `compactions`: each summary that replaced the model's view of older messages,
so a resumed session starts from its compacted view while `messages` keeps everything.
Version 4 — `plan_runs` and `plan_milestones`: how far each run of a plan file got
(`codecoder exec --plan`), so `--continue` goes on from the first milestone not passed.
Version 5 — what a replay needs besides the messages (kernel/journal.py): `messages.record`,
the record's entries that precede a message, in its row (no statement of its own), and
`records`, the entries a turn's end writes with no message to go with (`after`: the id of
the last message then).
Version 6 — `checkpoints`: the files each turn changed in the workspace, as they were before
and after it (object ids in the workspace's private object store, checkpoints/), whether
the turn is undone, and the id of the turn's first message (a fork before it rewinds the
conversation): `codecoder undo`, `/undo`, `_codecoder/undo`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from codecoder.sessions.errors import SchemaTooNew

V1_DDL = """
CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    cwd             TEXT NOT NULL,
    model           TEXT NOT NULL,
    title           TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    parent_id       TEXT,
    fork_message_id INTEGER,
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cached_tokens   INTEGER NOT NULL DEFAULT 0,
    cost            REAL,
    turns           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);
CREATE INDEX sessions_by_age ON sessions (updated_at);
CREATE TABLE messages (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    status     TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at REAL NOT NULL
);
CREATE UNIQUE INDEX messages_by_session ON messages (session_id, seq);
"""

BYTES_PER_TOKEN = 4
"""The estimate used for `messages.tokens`: one token per four bytes of the message's JSON
(the same rule in Python and in the SQL backfill below)."""


def _to_v2(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE messages ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        f"UPDATE messages SET tokens = (length(body) + {BYTES_PER_TOKEN - 1}) / {BYTES_PER_TOKEN}"
    )
    conn.execute("ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE sessions ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "UPDATE sessions SET message_count ="
        " (SELECT count(*) FROM messages WHERE messages.session_id = sessions.id)"
    )


def _to_v3(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE compactions (
            session_id    TEXT NOT NULL,
            first_kept_id INTEGER NOT NULL,
            summary       BLOB NOT NULL,
            before_tokens INTEGER NOT NULL,
            after_tokens  INTEGER NOT NULL,
            created_at    REAL NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX compactions_by_session ON compactions (session_id, created_at)")


def _to_v4(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE plan_runs (
            id         TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            cwd        TEXT NOT NULL,
            plan_path  TEXT NOT NULL,
            digest     TEXT NOT NULL,
            status     TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX plan_runs_by_plan ON plan_runs (cwd, plan_path, updated_at)")
    conn.execute(
        """CREATE TABLE plan_milestones (
            run_id     TEXT NOT NULL,
            name       TEXT NOT NULL,
            position   INTEGER NOT NULL,
            status     TEXT NOT NULL,
            attempts   INTEGER NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL,
            PRIMARY KEY (run_id, name)
        )"""
    )


def _to_v5(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE messages ADD COLUMN record BLOB")
    conn.execute(
        """CREATE TABLE records (
            id         INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            after      INTEGER NOT NULL,
            body       BLOB NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX records_by_session ON records (session_id, id)")


def _to_v6(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE checkpoints (
            id         INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            turn       INTEGER NOT NULL,
            message_id INTEGER,
            workspace  TEXT NOT NULL,
            store      TEXT NOT NULL,
            files      BLOB NOT NULL,
            state      TEXT NOT NULL DEFAULT 'done',
            created_at REAL NOT NULL,
            changed_at REAL NOT NULL,
            UNIQUE (session_id, turn)
        )"""
    )
    conn.execute("CREATE INDEX checkpoints_by_workspace ON checkpoints (workspace, changed_at)")


def _to_v1(conn: sqlite3.Connection) -> None:
    for statement in V1_DDL.split(";"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _to_v1,
    _to_v2,
    _to_v3,
    _to_v4,
    _to_v5,
    _to_v6,
)
"""MIGRATIONS[n] takes a database from version n to n + 1."""

CURRENT_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to CURRENT_VERSION; returns the version it was found at.

    Runs under BEGIN IMMEDIATE and re-reads the version inside, so two processes opening a
    fresh file at once migrate it exactly once. `conn` must be in autocommit mode.
    """
    if _version(conn) == CURRENT_VERSION:
        return CURRENT_VERSION
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _version(conn)
        if found > CURRENT_VERSION:
            raise SchemaTooNew(
                f"the session store is at schema {found}; this CodeCoder knows up to "
                f"{CURRENT_VERSION} (upgrade CodeCoder)"
            )
        for step in MIGRATIONS[found:]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {CURRENT_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])
