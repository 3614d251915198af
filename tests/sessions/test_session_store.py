"""The store on a real SQLite file: round-trips, totals, ids, forks, capping, pragmas."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
import tracemalloc
from pathlib import Path

import msgspec
import pytest

from codecoder.kernel.events import Usage
from codecoder.kernel.messages import (
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    tool_result,
    user_message,
)
from codecoder.kernel.ports import HistorySink
from codecoder.kernel.reply import MAX_REPLY_ARGS, MAX_REPLY_TEXT
from codecoder.sessions import (
    AmbiguousSession,
    SessionError,
    SessionLog,
    SessionStore,
    UnknownSession,
    check_valid,
)
from codecoder.sessions.records import TITLE_CAP, TOOL_OUTPUT_CAP
from codecoder.sessions.repair import CANCELLED_TEXT, repair
from tests.sessions.session_samples import every_kind, exchange


def _conforms(log: SessionLog) -> HistorySink:
    return log  # pyright checks the structure


def test_every_message_kind_round_trips(store: SessionStore, tmp_path: Path) -> None:
    session = store.create(tmp_path, "openai/gpt-5")
    for message in every_kind():
        store.append(session, message)
    assert store.load_messages(session) == every_kind()
    with SessionStore(store.path) as other:  # a fresh connection, nothing cached
        loaded = other.load_messages(session)
    assert loaded == every_kind()
    assert loaded[4].status == "interrupted"
    assert loaded[2].items[0] == every_kind()[2].items[0]  # the opaque token, byte for byte
    assert loaded[2].tool_calls[1].raw_args == '{"cmd": "ls'


def test_session_row_records_cwd_model_title_and_times(store: SessionStore, tmp_path: Path) -> None:
    before = time.time()
    session = store.create(tmp_path / "." / "sub" / "..", "anthropic/claude-sonnet-4-5")
    info = store.get(session)
    assert (info.cwd, info.model, info.title) == (str(tmp_path.resolve()), info.model, None)
    assert len(session) == 32 and int(session, 16) >= 0
    assert before <= info.created_at == info.updated_at <= time.time()
    for message in every_kind():
        store.append(session, message)
    info = store.get(session)
    assert info.title == "Fix the parser"  # the first line of the first user message
    assert info.message_count == 5
    assert info.updated_at >= info.created_at


def test_title_comes_from_the_first_user_message_with_text(store: SessionStore) -> None:
    session = store.create("/", "m/m")
    store.append(session, user_message("   \n\n", id=1))
    store.append(session, user_message("\n  " + "long words " * 20, id=2))
    store.append(session, user_message("later message", id=3))
    title = store.get(session).title
    assert title is not None and len(title) == TITLE_CAP and title.startswith("long words")
    assert title.endswith("…")


def test_usage_cost_and_turns_accumulate(store: SessionStore) -> None:
    log = SessionLog(store, store.create("/", "m/m"))
    assert log.info().cost is None
    assert [log.begin_turn(), log.begin_turn()] == [1, 2]
    log.add_usage(Usage(input_tokens=100, output_tokens=20, cached_tokens=50, reasoning_tokens=7))
    assert log.info().cost is None  # no price known yet
    log.add_usage(Usage(input_tokens=1, output_tokens=2, cached_tokens=3, cost=0.25))
    log.add_usage(Usage(input_tokens=0, cost=0.5))
    info = log.info()
    assert (info.input_tokens, info.output_tokens, info.cached_tokens) == (101, 22, 53)
    assert (info.reasoning_tokens, info.cost, info.turns) == (7, 0.75, 2)


def test_append_rejects_unknown_sessions_and_ids_not_increasing(store: SessionStore) -> None:
    with pytest.raises(UnknownSession):
        store.append("f" * 32, user_message("x", id=1))
    with pytest.raises(UnknownSession):
        store.add_usage("f" * 32, Usage(input_tokens=1))
    with pytest.raises(UnknownSession):
        store.begin_turn("f" * 32)
    session = store.create("/", "m/m")
    store.append(session, user_message("a", id=5))
    for bad in (5, 4):
        with pytest.raises(SessionError, match="not above the last id 5"):
            store.append(session, user_message("b", id=bad))
    assert store.load_messages(session) == [user_message("a", id=5)]
    assert store.get(session).message_count == 1  # the failed appends left nothing behind


def test_long_tool_output_is_stored_cut_in_the_middle(store: SessionStore) -> None:
    session = store.create("/", "m/m")
    head, tail = "HEAD" + "h" * 50_000, "t" * 50_000 + "TAIL"
    text = head + "middle" * 5_000 + tail
    long = Message(id=1, role="tool", items=(tool_result("c1", text, "error"),))
    short = Message(id=2, role="tool", items=(tool_result("c2", "x" * TOOL_OUTPUT_CAP),))
    store.append(session, long)
    store.append(session, short)
    stored_long, stored_short = store.load_messages(session)
    result = stored_long.tool_results[0]
    assert result.status == "error" and result.tool_call_id == "c1"
    assert result.text.startswith("HEAD") and result.text.endswith("TAIL")
    assert "characters cut from the middle" in result.text
    assert "middle" * 10 not in result.text
    assert len(result.text) < TOOL_OUTPUT_CAP + 200
    assert stored_short == short  # at the cap exactly: untouched


def test_a_message_past_the_reply_caps_is_stored_bounded(store: SessionStore) -> None:
    """Whoever wrote it (the loop caps a reply as it streams), the store keeps no text,
    reasoning or raw arguments past the kernel's caps: the head, and a note of the cut."""
    session = store.create("/", "m/m")
    over = 2 * MAX_REPLY_TEXT
    items = (
        Reasoning("r" * over, token="sig"),
        Text("HEAD" + "x" * over),
        ToolCall(id="c1", name="write_file", args={}, raw_args="{" + "a" * MAX_REPLY_ARGS),
    )
    big = Message(id=1, role="assistant", items=items, status="interrupted")
    at_cap = Message(id=2, role="assistant", items=(Text("y" * MAX_REPLY_TEXT),))
    store.append(session, big)
    store.append(session, at_cap)
    store.draft(session, msgspec.structs.replace(big, id=3))
    stored, stored_at_cap, drafted = store.load_messages(session)
    for message in (stored, drafted):
        reasoning, text, call = message.items
        assert isinstance(reasoning, Reasoning) and isinstance(text, Text)
        assert isinstance(call, ToolCall) and call.raw_args is not None
        assert text.text.startswith("HEAD") and text.text.endswith(
            "cut when the session was stored …]"
        )
        assert len(text.text) < MAX_REPLY_TEXT + 100 and len(reasoning.text) < MAX_REPLY_TEXT + 100
        assert reasoning.token == "sig" and len(call.raw_args) < MAX_REPLY_ARGS + 100
    assert stored_at_cap == at_cap  # at the cap exactly: untouched
    with sqlite3.connect(store.path) as conn:
        largest = conn.execute("SELECT max(length(body)) FROM messages").fetchone()[0]
    assert largest < 2 * MAX_REPLY_TEXT + MAX_REPLY_ARGS + 1024


def test_load_after_and_estimates(store: SessionStore) -> None:
    session = store.create("/", "m/m")
    history = exchange(1, 5)
    for message in history:
        store.append(session, message)
    assert store.load_messages(session, after=12) == history[12:]
    assert store.last_message_id(session) == 20
    assert store.last_message_id(store.create("/", "m/m")) is None
    total, tail = store.token_estimate(session), store.token_estimate(session, after=12)
    assert 0 < tail < total
    assert total >= sum(len(m.text) for m in history) // 4
    with pytest.raises(UnknownSession):
        store.load_messages("0" * 32)


def test_sessions_listed_newest_first_per_folder(store: SessionStore, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    first = store.create(a, "m/m")
    second = store.create(b, "m/m")
    third = store.create(a, "m/m")
    assert [s.id for s in store.list_sessions(a)] == [third, first]
    store.append(first, user_message("touch", id=1))  # updating moves it to the front
    assert [s.id for s in store.list_sessions(a)] == [first, third]
    assert [s.id for s in store.list_sessions()] == [first, third, second]
    assert [s.id for s in store.list_sessions(limit=2)] == [first, third]
    latest = store.latest_for(str(a) + "/.")
    assert latest is not None and latest.id == first
    assert store.latest_for(tmp_path / "none") is None


def test_id_prefixes_resolve_or_fail_clearly(store: SessionStore) -> None:
    session = store.create("/", "m/m")
    assert store.resolve(session) == session
    assert store.resolve(session[:4].upper() + " ") == session
    with pytest.raises(SessionError, match="at least 4 characters"):
        store.resolve(session[:3])
    with pytest.raises(UnknownSession, match="no session matches"):
        store.resolve("zzzzzzzz")
    # two ids sharing a prefix, written as another CodeCoder process would write them
    with sqlite3.connect(store.path) as conn:
        for tail in ("a", "b"):
            conn.execute(
                "INSERT INTO sessions (id, cwd, model, created_at, updated_at)"
                " VALUES (?, '/', 'm/m', 0, 0)",
                ("12345678" + tail * 24,),
            )
    conn.close()
    with pytest.raises(AmbiguousSession, match="more than one session id"):
        store.resolve("12345678")
    assert store.resolve("12345678b") == "12345678" + "b" * 24


def test_fork_copies_up_to_a_message_and_keeps_the_parent(store: SessionStore) -> None:
    parent = store.create("/work", "m/m")
    history = every_kind()
    for message in history:
        store.append(parent, message)
    store.begin_turn(parent)

    whole = store.fork(parent)
    assert store.load_messages(whole) == history
    info = store.get(whole)
    assert (info.parent_id, info.fork_message_id, info.cwd) == (parent, 4, "/work")
    assert (info.title, info.message_count, info.turns) == ("Fix the parser", 5, 1)

    at_call = store.fork(parent, at_message_id=2)
    assert store.load_messages(at_call) == history[:3]
    # the fork ends on an assistant message whose calls never ran: resume answers them
    resumed = SessionLog(store, at_call).resume()
    check_valid(resumed)
    assert [r.status for r in resumed[-1].tool_results] == ["cancelled"] * 3
    assert store.load_messages(parent) == history  # the parent is untouched

    with pytest.raises(SessionError, match="has no message 99"):
        store.fork(parent, 99)
    with pytest.raises(UnknownSession):
        store.fork("0" * 32)
    empty = store.fork(store.create("/", "m/m"))
    assert store.load_messages(empty) == [] and store.get(empty).fork_message_id is None


def test_resume_persists_the_repair_so_the_next_id_is_free(store: SessionStore) -> None:
    log = SessionLog(store, store.create("/", "m/m"))
    call = ToolCall(id="c1", name="run_command", args={"cmd": "make"})
    log.append(user_message("build it", id=1))
    log.append(Message(id=2, role="assistant", items=(Text("Building."), call)))
    history = log.resume()
    check_valid(history)
    assert history[-1] == Message(
        id=3,
        role="tool",
        items=(ToolResult(tool_call_id="c1", content=(Text(CANCELLED_TEXT),), status="cancelled"),),
    )
    assert store.load_messages(log.session_id) == history
    assert log.resume() == history  # nothing more to add the second time
    log.append(user_message("go on", id=4))
    assert len(store.load_messages(log.session_id)) == 4


def test_session_log_is_a_history_sink(store: SessionStore) -> None:
    log = SessionLog(store, store.create("/", "m/m"))
    assert isinstance(log, HistorySink)
    log.append(user_message("hi", id=1))
    assert store.load_messages(log.session_id) == [user_message("hi", id=1)]


def test_record_rows_go_in_with_the_message_they_precede(store: SessionStore) -> None:
    """A Recorder's entries wait for the next message and go into its row; a turn's end
    is written at once, after its last message; a fork has no record of its own."""
    log = SessionLog(store, store.create("/w", "m"))
    log.record(b"[1]", now=False)
    assert store.load_records(log.session_id) == []  # waiting for its message
    log.append(user_message("hi", id=1))
    assert store.load_records(log.session_id) == [b"[1]"]
    log.record(b"[2]", now=True)
    log.record(b"[3]", now=False)
    log.append(user_message("again", id=2))
    assert store.load_records(log.session_id) == [b"[1]", b"[2]", b"[3]"]
    log.record(b"[4]", now=False)
    with pytest.raises(SessionError):
        log.append(user_message("an id not above the last", id=2))
    assert store.load_records(log.session_id) == [b"[1]", b"[2]", b"[3]"]
    log.record(b"[5]", now=True)  # what the failed append held is kept, in order
    assert store.load_records(log.session_id) == [b"[1]", b"[2]", b"[3]", b"[4]", b"[5]"]
    assert store.load_records(store.fork(log.session_id)) == []


def test_file_mode_pragmas_and_private_permissions(store: SessionStore, db: Path) -> None:
    store.create("/", "m/m")
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    assert conn.isolation_level is None


def test_each_thread_gets_its_own_connection(store: SessionStore) -> None:
    seen: list[object] = []

    def grab() -> None:
        seen.append(store._conn())

    threads = [threading.Thread(target=grab) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen.append(store._conn())
    assert len({id(conn) for conn in seen}) == 4
    assert store._conn() is seen[-1]


def test_closed_store_refuses_work(db: Path) -> None:
    store = SessionStore(db)
    store.create("/", "m/m")
    store.close()
    with pytest.raises(SessionError, match="closed"):
        store.list_sessions()
    errors: list[BaseException] = []

    def use() -> None:
        try:
            store.list_sessions()
        except SessionError as exc:
            errors.append(exc)

    thread = threading.Thread(target=use)
    thread.start()
    thread.join()
    assert errors and "closed" in str(errors[0])


def test_appends_never_checkpoint_the_checkpoint_thread_does(db: Path) -> None:
    with SessionStore(db, checkpoint_every=1_000_000) as quiet:
        session = quiet.create("/", "m/m")
        size = db.stat().st_size
        for message in exchange(1, 50):
            quiet.append(session, message)
        assert db.stat().st_size == size  # every page still in the WAL
        assert not _checkpoint_threads()

    with SessionStore(db, checkpoint_every=20) as busy:
        session = busy.create("/", "m/m")
        size = db.stat().st_size
        for message in exchange(1, 50):
            busy.append(session, message)
        assert _checkpoint_threads()
        deadline = time.monotonic() + 10
        while db.stat().st_size == size and time.monotonic() < deadline:
            time.sleep(0.01)
        assert db.stat().st_size > size  # pages copied back by the checkpoint thread
    assert not _checkpoint_threads()


def test_append_latency_p99(store: SessionStore) -> None:
    """Target p99 ≤ 2 ms (bench/bench_store.py); asserted at 10x so it never flakes."""
    session = store.create("/", "m/m")
    times = []
    for message in exchange(1, 100):
        start = time.perf_counter()
        store.append(session, message)
        times.append(time.perf_counter() - start)
    times.sort()
    assert times[int(len(times) * 0.99)] < 0.020


def test_store_under_xdg_data_home(xdg_data: Path) -> None:
    with SessionStore() as store:
        store.create("/", "m/m")
        assert store.path == xdg_data
    assert xdg_data.exists()
    assert os.access(xdg_data, os.R_OK | os.W_OK)


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "codecoder-checkpoint"]


def test_a_10000_message_session_loads_and_repairs_quickly(store: SessionStore) -> None:
    """Resume target ≤ 300 ms from launch, peak ≤ 150 MB (bench/bench_store.py has the
    figures); here load + repair must stay within 10x of the whole budget."""
    session = store.create("/", "m/m")
    history = exchange(1, 2500)
    for message in history:
        store.append(session, message)
    store.append(session, Message(id=10_001, role="assistant", items=(ToolCall("x", "f", {}),)))
    tracemalloc.start()
    start = time.perf_counter()
    resumed = repair(store.load_messages(session))
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(resumed) == 10_002 and resumed[:10_000] == history
    check_valid(resumed)
    assert elapsed < 3.0
    assert peak < 150 * 2**20
