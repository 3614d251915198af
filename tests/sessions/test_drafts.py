"""Drafts of a streaming reply in the store: what a crash leaves, and how the reply's
own commit replaces its draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from codecoder.kernel.messages import Message, Text, user_message
from codecoder.kernel.ports import DraftSink
from codecoder.sessions import SessionError, SessionLog, SessionStore


def reply(message_id: int, text: str, *, interrupted: bool = False) -> Message:
    status = "interrupted" if interrupted else "complete"
    return Message(id=message_id, role="assistant", items=(Text(text),), status=status)


def test_a_draft_left_by_a_crash_loads_as_an_interrupted_message(
    store: SessionStore, db: Path, tmp_path: Path
) -> None:
    session = store.create(tmp_path, "m")
    log = SessionLog(store, session)
    assert isinstance(log, DraftSink)
    log.append(_user(1))
    log.draft(reply(2, "Half of", interrupted=True))
    log.draft(reply(2, "Half of the answer", interrupted=True))
    store.close()
    with SessionStore(db) as reopened:  # another process, after the kill
        messages = reopened.load_messages(session)
        assert [(m.id, m.status, m.text) for m in messages] == [
            (1, "complete", "go"),
            (2, "interrupted", "Half of the answer"),
        ]
        assert reopened.get(session).message_count == 2
        resumed = SessionLog(reopened, session)
        resumed.resume()
        resumed.append(_user(3))  # a resumed session goes on above the draft
        assert [m.id for m in reopened.load_messages(session)] == [1, 2, 3]


def test_the_reply_replaces_its_draft_and_is_counted_once(
    store: SessionStore, tmp_path: Path
) -> None:
    session = store.create(tmp_path, "m")
    log = SessionLog(store, session)
    log.append(_user(1))
    log.draft(reply(2, "The ans", interrupted=True))
    log.append(reply(2, "The answer."))
    messages = store.load_messages(session)
    assert [(m.id, m.status, m.text) for m in messages] == [
        (1, "complete", "go"),
        (2, "complete", "The answer."),
    ]
    assert store.get(session).message_count == 2
    log.append(_user(3))  # only the drafted id is replaced
    with pytest.raises(SessionError):
        log.append(reply(3, "again"))


def test_only_a_draft_is_replaced(store: SessionStore, tmp_path: Path) -> None:
    """A committed message under the id is never overwritten, by a draft or by an
    append that thinks it replaces one."""
    session = store.create(tmp_path, "m")
    store.append(session, _user(1))
    with pytest.raises(SessionError):
        store.draft(session, reply(1, "draft"))
    with pytest.raises(SessionError):
        store.append(session, reply(1, "x"), replaces_draft=True)
    assert [m.text for m in store.load_messages(session)] == ["go"]


def _user(message_id: int) -> Message:
    message = user_message("go")
    return Message(id=message_id, role=message.role, items=message.items)
