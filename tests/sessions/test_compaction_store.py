"""Compactions in the store: recorded beside the full history, used on resume."""

from __future__ import annotations

from codecoder.kernel.messages import Message, Text, ToolCall, tool_result, user_message
from codecoder.kernel.ports import CompactedView
from codecoder.sessions import SessionLog, SessionStore
from tests.invariants import check_history


def _history() -> list[Message]:
    return [
        user_message("first task", id=1),
        Message(id=2, role="assistant", items=(ToolCall("c1", "read_file", {"path": "a"}),)),
        Message(id=3, role="tool", items=(tool_result("c1", "contents"),)),
        Message(id=4, role="assistant", items=(Text("read it"),)),
        user_message("second task", id=5),
        Message(id=6, role="assistant", items=(ToolCall("c2", "grep", {"pattern": "x"}),)),
    ]


def test_resume_starts_from_the_latest_compaction_and_keeps_everything(
    store: SessionStore,
) -> None:
    session = store.create("/proj", "scripted")
    log = SessionLog(store, session)
    for message in _history():
        log.append(message)
    summary = Message(id=0, role="user", items=(Text("[Summary] read a"),))
    log.record_compaction(
        CompactedView(summary, first_kept_id=4, before_tokens=900, after_tokens=90)
    )
    newer = Message(id=0, role="user", items=(Text("[Summary] newer"),))
    log.record_compaction(CompactedView(newer, first_kept_id=5, before_tokens=800, after_tokens=80))
    view = log.resume()
    assert view[0] == newer
    assert [m.id for m in view[1:]] == [5, 6, 7]  # 7: the cancelled result repair added
    assert view[-1].tool_results[0].status == "cancelled"
    check_history(view)
    assert [m.id for m in store.load_messages(session)] == [1, 2, 3, 4, 5, 6, 7]
    assert store.latest_compaction(session) == CompactedView(newer, 5, 800, 80)


def test_a_session_without_compaction_resumes_whole(store: SessionStore) -> None:
    session = store.create("/proj", "scripted")
    log = SessionLog(store, session)
    for message in _history()[:4]:
        log.append(message)
    assert store.latest_compaction(session) is None
    assert [m.id for m in log.resume()] == [1, 2, 3, 4]
