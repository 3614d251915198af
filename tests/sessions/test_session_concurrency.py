"""Readers during writes: threads sharing one store, and separate processes on one file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from codecoder.sessions.store import SessionStore
from tests.sessions.session_samples import exchange

ROUNDS = 100  # 400 messages


def assert_prefix(ids: list[int]) -> None:
    """A reader sees a committed prefix: ids 1..k with no gap and nothing half-written."""
    assert ids == list(range(1, len(ids) + 1))


def test_reader_threads_see_committed_prefixes_while_a_thread_writes(store: SessionStore) -> None:
    session = store.create("/", "m/m")
    history = exchange(1, ROUNDS)
    done = threading.Event()
    seen: list[int] = []
    finals: list[list[int]] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for message in history:
                store.append(session, message)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while True:
                finished = done.is_set()
                ids = [m.id for m in store.load_messages(session)]
                count = store.get(session).message_count
                listed = store.list_sessions("/")
                assert_prefix(ids)
                assert count >= len(ids) and listed[0].id == session
                seen.append(len(ids))
                if finished:
                    finals.append(ids)
                    return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert finals == [list(range(1, 4 * ROUNDS + 1))] * 3
    assert any(0 < count < 4 * ROUNDS for count in seen)  # some reads overlapped the writes
    assert store.load_messages(session) == history


WRITER = """
import sys, time
sys.path.insert(0, sys.argv[3])
from tests.sessions.session_samples import exchange
from codecoder.sessions.store import SessionStore
pause = float(sys.argv[5])
if pause:
    sys.stdin.readline()  # go: the reader is running
with SessionStore(sys.argv[1]) as store:
    for message in exchange(1, int(sys.argv[4])):
        store.append(sys.argv[2], message)
        time.sleep(pause)
"""

READER = """
import json, sys, time
from codecoder.sessions.store import SessionStore
session, want = sys.argv[2], int(sys.argv[3])
loads, partial = 0, 0
deadline = time.monotonic() + 60
with SessionStore(sys.argv[1]) as store:
    store.list_sessions()
    print("ready", flush=True)
    while time.monotonic() < deadline:
        ids = [m.id for m in store.load_messages(session)]
        listed = [s.id for s in store.list_sessions()]
        if ids != list(range(1, len(ids) + 1)) or session not in listed:
            print(json.dumps({"bad": ids[:20]}))
            sys.exit(1)
        loads += 1
        partial += 0 < len(ids) < want
        if len(ids) == want:
            break
print(json.dumps({"loads": loads, "partial": partial, "final": len(ids)}))
"""


def test_a_reader_process_loads_while_a_writer_process_appends(db: Path) -> None:
    with SessionStore(db) as store:
        session = store.create("/", "m/m")
    here = str(Path(__file__).parent)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), session, here, str(ROUNDS), "0.0005"],
        stdin=subprocess.PIPE,
        text=True,
    )
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(db), session, str(4 * ROUNDS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and writer.stdin is not None
        assert reader.stdout.readline() == "ready\n"
        writer.stdin.write("go\n")
        writer.stdin.close()
        out, _ = reader.communicate(timeout=90)
        assert writer.wait(timeout=90) == 0
    finally:
        for child in (writer, reader):
            child.kill()
            child.wait()
    assert reader.returncode == 0, out
    report = json.loads(out)
    assert report["final"] == 4 * ROUNDS
    assert report["partial"] >= 1  # it did read while the writer was half-way
    with SessionStore(db) as store:
        assert store.load_messages(session) == exchange(1, ROUNDS)


def test_two_writer_processes_share_the_file(db: Path) -> None:
    with SessionStore(db) as store:
        sessions = [store.create("/", "m/m") for _ in range(2)]
    here = str(Path(__file__).parent)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), session, here, str(ROUNDS), "0"])
        for session in sessions
    ]
    try:
        codes = [writer.wait(timeout=90) for writer in writers]
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    assert codes == [0, 0]
    with SessionStore(db) as store:
        for session in sessions:
            assert store.load_messages(session) == exchange(1, ROUNDS)
            assert store.get(session).message_count == 4 * ROUNDS


def test_a_new_connection_never_opens_the_database_file_itself(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing any descriptor of the file drops every POSIX lock this process holds on it,
    the other connections' too; a connection closing after that thought it was the last,
    deleted the WAL and lost a session another thread had just made (the terminal
    client's /new, one run in two). So once the file exists, only SQLite opens it."""
    first = SessionStore(db)
    session = first.create("/", "m/m")
    opened: list[str] = []
    real_open = os.open

    def watching_open(path: Any, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, *args, **kwargs)
        opened.append(os.fspath(path))  # a descriptor was made
        return fd

    monkeypatch.setattr(os, "open", watching_open)
    second = SessionStore(db)
    made: list[str] = []
    worker = threading.Thread(target=lambda: made.append(second.create("/", "m/m")))
    worker.start()
    worker.join()
    second.begin_turn(made[0])  # this thread's connection, another new one
    first.close()
    second.close()
    assert os.fspath(db) not in opened
    with SessionStore(db) as third:
        assert {s.id for s in third.list_sessions("/")} == {session, made[0]}
