"""Exports: JSONL decodes back to the same messages; Markdown and the transcript read well."""

from __future__ import annotations

import time

from codecoder.kernel.codec import decode
from codecoder.kernel.messages import Message, tool_result
from codecoder.sessions.export import age, jsonl, markdown, transcript
from codecoder.sessions.store import SessionStore
from tests.sessions.session_samples import every_kind


def test_jsonl_is_one_message_per_line_and_lossless() -> None:
    lines = b"".join(jsonl(every_kind())).splitlines()
    assert len(lines) == len(every_kind())
    assert [decode(line, Message) for line in lines] == every_kind()


def test_markdown_shows_every_item_in_full(store: SessionStore) -> None:
    session = store.create("/proj", "openai/gpt-5")
    long_output = "\n".join(f"line {n} ```" for n in range(40))
    history = [*every_kind(), Message(id=5, role="tool", items=(tool_result("c9", long_output),))]
    for message in history:
        store.append(session, message)
    text = markdown(store.get(session), store.load_messages(session))
    assert text.startswith("# Fix the parser\n")
    assert f"- Session: `{session}`" in text and "- Folder: `/proj`" in text
    assert "## User · #1" in text and "## Assistant · #4 (interrupted)" in text
    assert "<summary>Reasoning</summary>" in text and "Look at the parser first." in text
    assert "**Tool call** `read_file` (`call_1`)" in text and '"path": "src/p.py"' in text
    assert 'arguments not valid JSON:\n\n```\n{"cmd": "ls\n```' in text
    assert "**Result** of `call_2` (error)" in text and "bad args" in text
    assert "**Result** of `call_3` (cancelled)" in text
    assert "line 39 ```" in text  # nothing shortened
    assert "````\nline 0 ```" in text  # a fence longer than the backticks inside
    assert "ünïcode 🚀" in text


def test_transcript_shortens_results_and_marks_interruptions(store: SessionStore) -> None:
    session = store.create("/proj", "openai/gpt-5")
    long_output = "\n".join(f"output line {n}" for n in range(30))
    for message in [
        *every_kind(),
        Message(id=5, role="tool", items=(tool_result("c9", long_output + "x" * 500),)),
    ]:
        store.append(session, message)
    text = transcript(store.get(session), store.load_messages(session), now=time.time() + 120)
    assert f"session  {session}" in text and "updated  2m ago" in text
    assert "[4] assistant (interrupted)" in text
    assert "  · thinking: Look at the parser first." in text
    assert '  → read_file {"path": "src/p.py", "n": [1, 2.5]}  (call_1)' in text
    assert '  → run_command {"cmd": "ls  (call_2)' in text
    assert "  ← call_2 error\n    bad args" in text
    assert "    output line 7\n    … 22 more lines" in text
    assert "output line 8" not in text


def test_transcript_names_the_parent_of_a_fork(store: SessionStore) -> None:
    parent = store.create("/", "m/m")
    for message in every_kind():
        store.append(parent, message)
    child = store.fork(parent, 1)
    text = transcript(store.get(child), store.load_messages(child))
    assert f"forked   from {parent[:8]} at message 1" in text


def test_age_reads_like_a_person_would_say_it() -> None:
    assert [age(s) for s in (5, 59, 60, 3 * 60 + 5, 3599, 3600, 86399, 86400 * 3)] == [
        "just now",
        "just now",
        "1m ago",
        "3m ago",
        "59m ago",
        "1h ago",
        "23h ago",
        "3d ago",
    ]
    assert age(86400 * 40) == time.strftime("%Y-%m-%d", time.localtime(time.time() - 86400 * 40))


def test_the_header_and_cut_results_count_in_english(store: SessionStore) -> None:
    session = store.create("/proj", "m/m")
    store.append(session, Message(id=1, role="tool", items=(tool_result("c1", "x\n" * 9),)))
    text = transcript(store.get(session), store.load_messages(session))
    assert "m/m · 0 turns · 1 message" in text
    assert "… 1 more line\n" in text
