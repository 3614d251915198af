"""A store that cannot be opened or written says so, naming its file; a turn whose
messages cannot be kept ends in an error instead of going on as if they were."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.kernel.events import Done, Error
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import user_message
from codecoder.providers.scripted import ScriptedProvider
from codecoder.sessions import SessionLog, SessionStore, StoreUnavailable
from codecoder.sessions import store as store_module


def test_a_file_that_is_not_a_database_names_the_file(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database" * 100)
    with SessionStore(db) as store, pytest.raises(StoreUnavailable) as caught:
        store.create(db.parent, "a/b")
    assert str(caught.value) == f"cannot open the session store {db}: file is not a database"


def test_a_folder_in_the_way_names_the_file(db: Path) -> None:
    db.parent.parent.mkdir(parents=True, exist_ok=True)
    db.parent.write_text("")
    with SessionStore(db) as store, pytest.raises(StoreUnavailable, match="is not a folder"):
        store.list_sessions()


@pytest.fixture
def locked(db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SessionStore, str]]:
    """A store whose next write cannot get the lock (another process holds it)."""
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT", 0.05)
    store = SessionStore(db)
    session = store.create(db.parent, "a/b")
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    yield store, session
    other.execute("ROLLBACK")
    other.close()
    store.close()


def test_a_write_that_fails_names_the_file(locked: tuple[SessionStore, str], db: Path) -> None:
    store, session = locked
    with pytest.raises(StoreUnavailable) as caught:
        store.append(session, user_message("hello", 1))
    assert str(caught.value).startswith(f"cannot write to the session store {db}: ")


def test_a_turn_whose_messages_cannot_be_kept_ends_in_an_error(
    locked: tuple[SessionStore, str], tmp_path: Path, db: Path
) -> None:
    store, session = locked
    loop = AgentLoop(
        ScriptedProvider.from_replies([["never sent"]]),
        [],
        tmp_path,
        history=SessionLog(store, session),
    )
    handle = loop.start()
    try:
        handle.send("hello")
        events = list(handle.turn())
    finally:
        handle.shutdown()
    errors = [e for e in events if isinstance(e, Error)]
    assert len(errors) == 1 and str(db) in errors[0].message
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error"
