"""The session store: SQLite in the XDG data dir, one transaction per message (invariant 6).

How it uses SQLite, and why:

- WAL mode, so readers (a `codecoder sessions` listing, the daemon) never block the writer
  and the writer never blocks them, across threads and processes.
- `synchronous=NORMAL`: a commit is durable against a crash of the process (SIGKILL at
  any instant loses at most the message not yet committed); a power cut or OS crash may
  lose the last few commits, never corrupt the file.
- `isolation_level=None` and explicit `BEGIN IMMEDIATE` for every write, so a writer takes
  the lock up front and waits for it under `busy_timeout` instead of failing half-way.
- One connection per thread: a store is shared by all threads of a process, and each
  thread gets its own connection from a `threading.local`, opened on first use and closed
  with the thread or by `close()`.
- Reads are single statements or short explicit transactions; no cursor stays open.
- A reply still streaming is kept as a `draft` row under the id its message will take
  (rewritten at most every 250 ms by the loop, replaced by that message's append), so a
  SIGKILL mid-stream leaves it as an interrupted message instead of nothing.
- Checkpoints are off the append path: connections run with `wal_autocheckpoint=0`, and a
  checkpoint thread of the store runs a PASSIVE checkpoint every `checkpoint_every`
  commits (the last connection to close checkpoints too, as SQLite always does).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import msgspec

from codecoder import boundary, paths
from codecoder.kernel.codec import encode
from codecoder.kernel.events import Usage
from codecoder.kernel.messages import Message
from codecoder.kernel.ports import CompactedView
from codecoder.sessions.errors import (
    AmbiguousSession,
    SessionError,
    StoreUnavailable,
    UnknownSession,
)
from codecoder.sessions.records import (
    CHECKPOINT_COLUMNS,
    PLAN_RUN_COLUMNS,
    SESSION_COLUMNS,
    CheckpointRow,
    MilestoneRecord,
    PlanRunInfo,
    SessionInfo,
    cap_message,
    title_of,
)
from codecoder.sessions.repair import repair
from codecoder.sessions.schema import BYTES_PER_TOKEN, migrate
from codecoder.terminal_text import visible

BUSY_TIMEOUT = 5.0
MIN_PREFIX = 4
"""Characters of a session id that name it where they are unique (git takes 4 too)."""
CANDIDATES_SHOWN = 5
"""Sessions an ambiguous id prefix lists."""
LOAD_CHUNK = 512
_decode_message = msgspec.json.Decoder(Message).decode


class _Connection(sqlite3.Connection):
    """A plain connection that can be weakly referenced (the store tracks its connections
    without keeping a finished thread's connection alive)."""


class SessionStore:
    """Sessions and their messages in one SQLite file (see the module docs for how).

    Methods take full session ids; `resolve` turns a user's id or id prefix into one.
    """

    def __init__(self, path: Path | str | None = None, *, checkpoint_every: int = 1000) -> None:
        self.path = Path(path) if path is not None else paths.sessions_db()
        boundary.own_database(self.path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._migrated = False
        self._closed = False
        self._checkpointer = _Checkpointer(self._open, checkpoint_every)

    # --- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection of this store; call it once its threads are done."""
        self._checkpointer.close()
        with self._lock:
            if not self._closed:
                boundary.release_database(self.path)
            self._closed = True
            connections = list(self._connections)
        for conn in connections:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- sessions --------------------------------------------------------------------

    def create(self, cwd: Path | str, model: str) -> str:
        """A new empty session in `cwd`; returns its id (32 random hex digits)."""
        session_id = _new_id()
        now = time.time()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO sessions (id, cwd, model, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, _workspace(cwd), model, now, now),
            )
        return session_id

    def get(self, session_id: str) -> SessionInfo:
        row = (
            self._conn()
            .execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
            .fetchone()
        )
        if row is None:
            raise UnknownSession(f"no session {session_id!r}")
        return SessionInfo(*row)

    def resolve(self, ref: str) -> str:
        """The full id of the one session whose id starts with `ref` (at least MIN_PREFIX
        characters, as git takes a commit's). An ambiguous one lists the sessions it
        matches, so the user sees how much to add."""
        prefix = ref.strip().lower()
        if len(prefix) < MIN_PREFIX:
            raise SessionError(
                f"session id {ref!r} is too short: give at least {MIN_PREFIX} characters"
            )
        rows = (
            self._conn()
            .execute(
                "SELECT id, title, cwd FROM sessions WHERE id >= ? AND id < ?"
                " ORDER BY updated_at DESC, id LIMIT ?",
                (prefix, prefix + "\uffff", CANDIDATES_SHOWN + 1),
            )
            .fetchall()
        )
        if not rows:
            raise UnknownSession(f"no session matches {ref!r}")
        if len(rows) > 1:
            shown = "; ".join(
                visible(f"{sid[:12]} {(title or '(untitled)')[:40]} in {cwd}", one_line=True)
                for sid, title, cwd in rows[:CANDIDATES_SHOWN]
            )
            more = ", …" if len(rows) > CANDIDATES_SHOWN else ""
            raise AmbiguousSession(
                f"{ref!r} starts more than one session id: {shown}{more}; give more characters"
            )
        return rows[0][0]

    def list_sessions(
        self,
        cwd: Path | str | None = None,
        limit: int = -1,
        *,
        answered_only: bool = False,
        keep: Collection[str] = (),
    ) -> list[SessionInfo]:
        """Sessions of `cwd` (every folder when None), the last updated first.

        `answered_only` leaves out the sessions with no assistant message, those that
        failed before a first answer or never got a prompt: a listing of them is noise
        (`codecoder sessions` hides them, `--all` shows them). A partial answer that a
        failure cut off counts as an answer. The ids in `keep` are listed all the same (a
        session running its first turn in the daemon has not failed)."""
        clauses: list[str] = []
        params: list[object] = []
        if cwd is not None:
            clauses.append("cwd = ?")
            params.append(_workspace(cwd))
        if answered_only:
            kept = list(keep)
            clauses.append(
                "(EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id"
                " AND messages.role = 'assistant')"
                + (f" OR id IN ({', '.join('?' * len(kept))})" if kept else "")
                + ")"
            )
            params.extend(kept)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = (
            self._conn()
            .execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions {where}"
                " ORDER BY updated_at DESC, id LIMIT ?",
                (*params, limit),
            )
            .fetchall()
        )
        return [SessionInfo(*row) for row in rows]

    def latest_for(self, cwd: Path | str) -> SessionInfo | None:
        """The session `--continue` picks: the one of this workspace updated last."""
        found = self.list_sessions(cwd, limit=1)
        return found[0] if found else None

    def fork(self, session_id: str, at_message_id: int | None = None) -> str:
        """A new session holding a copy of the messages up to `at_message_id` (all when
        None); its parent is `session_id`. Returns the new id."""
        new_id = _new_id()
        now = time.time()
        with self._write() as conn:
            source = self._info(conn, session_id)
            last = self._fork_point(conn, session_id, at_message_id)
            upto = last if last is not None else -1
            conn.execute(
                "INSERT INTO sessions (id, cwd, model, title, created_at, updated_at, parent_id,"
                " fork_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id, source.cwd, source.model, source.title, now, now, session_id, last),
            )
            copied = conn.execute(
                "INSERT INTO messages (session_id, seq, role, status, body, tokens, created_at)"
                " SELECT ?, seq, role, status, body, tokens, created_at FROM messages"
                " WHERE session_id = ? AND seq <= ? ORDER BY seq",
                (new_id, session_id, upto),
            ).rowcount
            conn.execute(
                "UPDATE sessions SET message_count = ?, turns = (SELECT count(*) FROM messages"
                " WHERE session_id = ? AND role = 'user') WHERE id = ?",
                (copied, new_id, new_id),
            )
        return new_id

    # --- writing one session ---------------------------------------------------------

    def append(
        self,
        session_id: str,
        message: Message,
        record: bytes | None = None,
        *,
        replaces_draft: bool = False,
    ) -> None:
        """Commit one message in its own transaction, with the `record` entries that
        precede it (kernel/journal.py) in its row. Its id must be above every id the
        session holds but a draft's it `replaces_draft` (see `draft`); a ToolResult
        longer than the cap is stored cut in the middle."""
        body = encode(cap_message(message))
        now = time.time()
        with self._write() as conn:
            replaced = 0
            if replaces_draft:
                replaced = conn.execute(
                    "DELETE FROM messages WHERE session_id = ? AND seq = ? AND status = 'draft'",
                    (session_id, message.id),
                ).rowcount
            self._insert(conn, session_id, message, body, now, replaced=replaced, record=record)

    def draft(self, session_id: str, message: Message) -> None:
        """Keep a reply still streaming, so that a crash leaves it as an interrupted
        message: the row of `message.id` is written with status `draft` (the body says
        interrupted) and rewritten by the next draft; the `append` of that id replaces
        it. A draft a crash left behind is an interrupted message like any other."""
        body = encode(cap_message(message))
        now = time.time()
        with self._write() as conn:
            rewritten = conn.execute(
                "UPDATE messages SET body = ?, tokens = ?, created_at = ?"
                " WHERE session_id = ? AND seq = ? AND status = 'draft'",
                (body, _tokens(body), now, session_id, message.id),
            ).rowcount
            if not rewritten:
                self._insert(conn, session_id, message, body, now, status="draft")

    @staticmethod
    def _insert(
        conn: sqlite3.Connection,
        session_id: str,
        message: Message,
        body: bytes,
        now: float,
        *,
        replaced: int = 0,
        status: str | None = None,
        record: bytes | None = None,
    ) -> None:
        """The row of a message whose id must be above the session's last (a row it
        `replaced` is already gone and not counted twice)."""
        row = conn.execute(
            "UPDATE sessions SET updated_at = ?, message_count = message_count + ?,"
            " title = coalesce(title, ?) WHERE id = ?"
            " RETURNING (SELECT max(seq) FROM messages WHERE session_id = ?)",
            (now, 1 - replaced, title_of(message), session_id, session_id),
        ).fetchone()
        if row is None:
            raise UnknownSession(f"no session {session_id!r}")
        if row[0] is not None and message.id <= row[0]:
            raise SessionError(
                f"message id {message.id} is not above the last id {row[0]} of session "
                f"{session_id[:8]}"
            )
        conn.execute(
            "INSERT INTO messages"
            " (session_id, seq, role, status, body, tokens, created_at, record)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                message.id,
                message.role,
                status or message.status,
                body,
                _tokens(body),
                now,
                record,
            ),
        )

    def add_record(self, session_id: str, body: bytes) -> None:
        """Entries of a session's record that no message follows yet (a turn's end)."""
        with self._write() as conn:
            self._info(conn, session_id)
            conn.execute(
                "INSERT INTO records (session_id, after, body) VALUES (?, coalesce("
                "(SELECT max(seq) FROM messages WHERE session_id = ?), 0), ?)",
                (session_id, session_id, body),
            )

    def load_records(self, session_id: str) -> list[bytes]:
        """The session's record in order: each message's entries before it, a turn's end
        after its last message (a forked session has none of its parent's)."""
        with self._read() as conn:
            self._info(conn, session_id)
            rows = conn.execute(
                "SELECT seq, 0, record FROM messages WHERE session_id = ? AND record IS NOT NULL"
                " UNION ALL SELECT after, 1, body FROM records WHERE session_id = ?"
                " ORDER BY 1, 2",
                (session_id, session_id),
            ).fetchall()
        return [bytes(body) for (_, _, body) in rows]

    def add_usage(self, session_id: str, usage: Usage) -> None:
        """Add one request's tokens (and cost, when its price is known) to the totals."""
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?,"
                " output_tokens = output_tokens + ?, cached_tokens = cached_tokens + ?,"
                " reasoning_tokens = reasoning_tokens + ?,"
                " cost = CASE WHEN ? IS NULL THEN cost ELSE coalesce(cost, 0) + ? END,"
                " updated_at = ? WHERE id = ?",
                (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cached_tokens,
                    usage.reasoning_tokens,
                    usage.cost,
                    usage.cost,
                    time.time(),
                    session_id,
                ),
            ).rowcount
            if not changed:
                raise UnknownSession(f"no session {session_id!r}")

    def begin_turn(self, session_id: str) -> int:
        """Count a new turn; returns its number (1 for the first turn of a session)."""
        with self._write() as conn:
            row = conn.execute(
                "UPDATE sessions SET turns = turns + 1, updated_at = ? WHERE id = ?"
                " RETURNING turns",
                (time.time(), session_id),
            ).fetchone()
            if row is None:
                raise UnknownSession(f"no session {session_id!r}")
            return int(row[0])

    # --- reading one session ---------------------------------------------------------

    def load_messages(self, session_id: str, *, after: int | None = None) -> list[Message]:
        """The stored messages in order (those with an id above `after` when given), as
        recorded: run them through `repair` before a provider sees them.

        Rows are decoded in chunks as they are read, so a big session never holds all its
        JSON and all its messages at once; the read transaction lasts as long as the
        decoding (tens of ms for 10,000 messages), and in WAL mode blocks no writer.
        """
        messages: list[Message] = []
        with self._read() as conn:
            self._info(conn, session_id)
            cursor = conn.execute(
                "SELECT body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
                (session_id, after if after is not None else -(2**63)),
            )
            while rows := cursor.fetchmany(LOAD_CHUNK):
                messages.extend(_decode_message(body) for (body,) in rows)
        return messages

    def record_compaction(self, session_id: str, view: CompactedView) -> None:
        """Remember a compaction; the messages it summarises stay where they are."""
        with self._write() as conn:
            self._info(conn, session_id)
            conn.execute(
                "INSERT INTO compactions VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    view.first_kept_id,
                    encode(view.summary),
                    view.before_tokens,
                    view.after_tokens,
                    time.time(),
                ),
            )

    def latest_compaction(self, session_id: str) -> CompactedView | None:
        row = (
            self._conn()
            .execute(
                "SELECT first_kept_id, summary, before_tokens, after_tokens FROM compactions"
                " WHERE session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (session_id,),
            )
            .fetchone()
        )
        if row is None:
            return None
        return CompactedView(
            summary=_decode_message(row[1]),
            first_kept_id=int(row[0]),
            before_tokens=int(row[2]),
            after_tokens=int(row[3]),
        )

    # --- plan runs (codecoder exec --plan) -------------------------------------------

    def start_plan_run(
        self,
        session_id: str,
        cwd: Path | str,
        plan_path: str,
        digest: str,
        milestones: Sequence[str],
        *,
        run_id: str | None = None,
    ) -> str:
        """Begin a run of a plan (a new one when `run_id` is None, else that earlier run
        going on): status running, the file's digest recorded, a row for every milestone
        name in plan order. Milestones the run already has keep their status and
        attempts; those no longer in the plan get position -1. Returns the run's id."""
        now = time.time()
        with self._write() as conn:
            self._info(conn, session_id)
            if run_id is None:
                run_id = _new_id()
                conn.execute(
                    "INSERT INTO plan_runs (id, session_id, cwd, plan_path, digest, status,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                    (run_id, session_id, _workspace(cwd), plan_path, digest, now, now),
                )
            else:
                changed = conn.execute(
                    "UPDATE plan_runs SET session_id = ?, digest = ?, status = 'running',"
                    " updated_at = ? WHERE id = ?",
                    (session_id, digest, now, run_id),
                ).rowcount
                if not changed:
                    raise SessionError(f"no plan run {run_id!r}")
                conn.execute("UPDATE plan_milestones SET position = -1 WHERE run_id = ?", (run_id,))
            conn.executemany(
                "INSERT INTO plan_milestones (run_id, name, position, status, attempts,"
                " updated_at) VALUES (?, ?, ?, 'pending', 0, ?)"
                " ON CONFLICT (run_id, name) DO UPDATE SET position = excluded.position",
                [(run_id, name, position, now) for position, name in enumerate(milestones)],
            )
        return run_id

    def plan_attempt_started(self, run_id: str, milestone: str) -> None:
        """Count a turn of `milestone`, now running."""
        self._plan_milestone(
            run_id,
            milestone,
            "UPDATE plan_milestones SET attempts = attempts + 1, status = 'running',"
            " updated_at = ? WHERE run_id = ? AND name = ?",
        )

    def plan_milestone_finished(self, run_id: str, milestone: str, status: str) -> None:
        """`status`: passed | failed | cancelled."""
        self._plan_milestone(
            run_id,
            milestone,
            "UPDATE plan_milestones SET status = ?, updated_at = ? WHERE run_id = ? AND name = ?",
            status,
        )

    def plan_run_finished(self, run_id: str, status: str) -> None:
        """`status`: passed | failed | cancelled."""
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE plan_runs SET status = ?, updated_at = ? WHERE id = ?",
                (status, time.time(), run_id),
            ).rowcount
            if not changed:
                raise SessionError(f"no plan run {run_id!r}")

    def latest_plan_run(self, cwd: Path | str, plan_path: str) -> PlanRunInfo | None:
        """The run of the plan file `plan_path` in workspace `cwd` started or continued
        last, with its milestones in plan order (removed ones last)."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {PLAN_RUN_COLUMNS} FROM plan_runs WHERE cwd = ? AND plan_path = ?"
                " ORDER BY updated_at DESC, rowid DESC LIMIT 1",
                (_workspace(cwd), plan_path),
            ).fetchone()
            if row is None:
                return None
            milestones = conn.execute(
                "SELECT name, position, status, attempts FROM plan_milestones"
                " WHERE run_id = ? ORDER BY position < 0, position, name",
                (row[0],),
            ).fetchall()
        return PlanRunInfo(*row, milestones=tuple(MilestoneRecord(*m) for m in milestones))

    def _plan_milestone(self, run_id: str, milestone: str, sql: str, *first: object) -> None:
        with self._write() as conn:
            changed = conn.execute(sql, (*first, time.time(), run_id, milestone)).rowcount
            if not changed:
                raise SessionError(f"plan run {run_id[:8]} has no milestone {milestone!r}")

    # --- checkpoints (checkpoints/: undo) ---------------------------------------------

    def save_checkpoint(
        self,
        session_id: str,
        turn: int,
        *,
        message_id: int | None,
        workspace: Path | str,
        store: str,
        files: bytes | None,
    ) -> None:
        """Keep what turn `turn` changed (`files`, JSON), replacing what was kept for it
        so far; None removes it (the turn's changes came to nothing)."""
        now = time.time()
        with self._write() as conn:
            if files is None:
                conn.execute(
                    "DELETE FROM checkpoints WHERE session_id = ? AND turn = ?", (session_id, turn)
                )
                return
            conn.execute(
                "INSERT INTO checkpoints (session_id, turn, message_id, workspace, store, files,"
                " created_at, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (session_id, turn) DO UPDATE SET files = excluded.files,"
                " message_id = coalesce(checkpoints.message_id, excluded.message_id),"
                " state = 'done', changed_at = excluded.changed_at",
                (session_id, turn, message_id, _workspace(workspace), store, files, now, now),
            )

    def checkpoints(
        self, *, session_id: str | None = None, workspace: Path | str | None = None
    ) -> list[CheckpointRow]:
        """The checkpoints of a session or of a workspace, the most recently changed
        first."""
        where, params = [], []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if workspace is not None:
            where.append("workspace = ?")
            params.append(_workspace(workspace))
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = (
            self._conn()
            .execute(
                f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints {clause}"
                " ORDER BY changed_at DESC, id DESC",
                params,
            )
            .fetchall()
        )
        return [CheckpointRow(*row) for row in rows]

    def set_checkpoint_state(self, checkpoint_id: int, state: str) -> None:
        """`done` or `undone`, now."""
        with self._write() as conn:
            conn.execute(
                "UPDATE checkpoints SET state = ?, changed_at = ? WHERE id = ?",
                (state, time.time(), checkpoint_id),
            )

    def forget_checkpoints(self, checkpoint_ids: Sequence[int]) -> None:
        """Remove those checkpoints (the oldest, when their object store is over its cap:
        checkpoints/prune.py); their turns can no longer be undone."""
        with self._write() as conn:
            conn.executemany(
                "DELETE FROM checkpoints WHERE id = ?", [(one,) for one in checkpoint_ids]
            )

    def token_estimate(self, session_id: str, *, after: int | None = None) -> int:
        """Estimated tokens of the stored messages (above `after`), from the index alone."""
        row = (
            self._conn()
            .execute(
                "SELECT coalesce(sum(tokens), 0) FROM messages WHERE session_id = ? AND seq > ?",
                (session_id, after if after is not None else -(2**63)),
            )
            .fetchone()
        )
        return int(row[0])

    def last_message_id(self, session_id: str) -> int | None:
        row = (
            self._conn()
            .execute("SELECT max(seq) FROM messages WHERE session_id = ?", (session_id,))
            .fetchone()
        )
        return None if row[0] is None else int(row[0])

    # --- connections -----------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not self._closed:
            return conn
        with self._lock:
            if self._closed:
                raise SessionError("the session store is closed")
        try:
            conn = self._open()
            with self._lock:
                self._connections.add(conn)
                if not self._migrated:
                    migrate(conn)
                    self._migrated = True
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailable(
                f"cannot open the session store {self.path}: {_why(exc)}"
            ) from exc
        self._local.conn = conn
        return conn

    def _open(self) -> _Connection:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except FileExistsError:  # a file where the folder should be
            raise NotADirectoryError(0, f"{self.path.parent} is not a folder") from None
        # Made private before SQLite makes it with the umask's mode. Never opened (and
        # closed) once it exists: closing any descriptor of the file drops every POSIX
        # lock this process holds on it, the other connections' too, and a connection
        # that then closes thinks it is the last, deletes the WAL and loses what the
        # others committed (seen: a session made on one thread gone from the next).
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
        if self.path.is_dir():  # SQLite would only say "unable to open database file"
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.path))
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT,
            isolation_level=None,
            check_same_thread=False,
            factory=_Connection,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
        _enable_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA journal_size_limit = 67108864")
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite's failures (a read-only or full disk, a file
        that is not a database) become a StoreUnavailable naming the file."""
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"cannot write to the session store {self.path}: {_why(exc)}"
            ) from exc
        self._checkpointer.note_commit()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One snapshot for several statements; kept short (fetch everything inside)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @staticmethod
    def _info(conn: sqlite3.Connection, session_id: str) -> SessionInfo:
        row = conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSession(f"no session {session_id!r}")
        return SessionInfo(*row)

    @staticmethod
    def _fork_point(conn: sqlite3.Connection, session_id: str, at: int | None) -> int | None:
        if at is None:
            row = conn.execute(
                "SELECT max(seq) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            return row[0]
        exists = conn.execute(
            "SELECT 1 FROM messages WHERE session_id = ? AND seq = ?", (session_id, at)
        ).fetchone()
        if exists is None:
            raise SessionError(f"session {session_id[:8]} has no message {at}")
        return at


class SessionLog:
    """The HistorySink of one session: what the agent loop writes through, and the
    RecordSink of its Recorder.

    `append` commits before it returns, so the loop calling it for each completed message
    before the next provider request keeps invariant 6; `draft` keeps the reply being
    streamed (kernel.ports.DraftSink). Record rows wait for the message they precede and
    go into its transaction, so recording adds no commit per message.
    """

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._staged: bytes | None = None
        self._drafted: int | None = None

    def append(self, message: Message) -> None:
        replaces = message.id == self._drafted
        self.store.append(self.session_id, message, self._staged, replaces_draft=replaces)
        self._staged = None
        self._drafted = None

    def draft(self, message: Message) -> None:
        self.store.draft(self.session_id, message)
        self._drafted = message.id

    def record(self, body: bytes, *, now: bool) -> None:
        if self._staged is not None:  # a failed append left it: keep both, in order
            self.store.add_record(self.session_id, self._staged)
            self._staged = None
        if now:
            self.store.add_record(self.session_id, body)
        else:
            self._staged = body

    def add_usage(self, usage: Usage) -> None:
        self.store.add_usage(self.session_id, usage)

    def begin_turn(self) -> int:
        return self.store.begin_turn(self.session_id)

    def info(self) -> SessionInfo:
        return self.store.get(self.session_id)

    def record_compaction(self, view: CompactedView) -> None:
        self.store.record_compaction(self.session_id, view)

    def resume(self) -> list[Message]:
        """The model's view to continue from, valid for a provider (invariant 3): the
        latest compaction's summary and the messages it kept, else the whole history.

        Messages the repair adds at the end (cancelled results of calls a crash cut off)
        are appended, so the store agrees with the view and the next id is free.
        """
        compaction = self.store.latest_compaction(self.session_id)
        after = compaction.first_kept_id - 1 if compaction is not None else None
        stored = self.store.load_messages(self.session_id, after=after)
        history = repair(stored)
        last = stored[-1].id if stored else None
        for message in history:
            if last is None or message.id > last:
                self.append(message)
        return [compaction.summary, *history] if compaction is not None else history


class _Checkpointer:
    """PASSIVE checkpoints on a thread of their own, woken every `every` commits, so that
    no append pays for copying the WAL back into the database."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], every: int) -> None:
        self._connect = connect
        self._every = every
        self._commits = itertools.count(1)
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def note_commit(self) -> None:
        if next(self._commits) % self._every:
            return
        with self._lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="codecoder-checkpoint", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def close(self) -> None:
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        conn = self._connect()
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    # A checkpoint that cannot run now leaves the WAL to the next one.
                    continue
        finally:
            conn.close()


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (a no-op once the file is in WAL mode; the mode is persistent).

    Two processes switching a fresh file at once can deadlock inside SQLite, which then
    answers SQLITE_BUSY at once instead of calling its busy handler; so the waiting the
    busy handler would do is done here, within the same timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return str(exc)


def _tokens(body: bytes) -> int:
    return (len(body) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def _new_id() -> str:
    """32 random hex digits (os.urandom: `secrets` costs 6 ms of imports at start-up)."""
    return os.urandom(16).hex()


def _workspace(cwd: Path | str) -> str:
    return str(Path(cwd).resolve())
