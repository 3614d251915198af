"""ProcessManager against real child processes: the subreaper, orphan reaping that never
steals a Popen's status, kill_all, and the head/tail buffer."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codecoder.kernel.cancel import CancelToken
from codecoder.tools import process
from codecoder.tools.process import (
    CommandOutcome,
    HeadTail,
    ProcessManager,
    Snapshot,
    parse_stat,
    read_stat,
)
from codecoder.wording import counted
from tests.procfs import marked, stat_of, wait_exit

pytestmark = pytest.mark.timeout(60)


# --- helpers (independent of the code under test) ------------------------------------


def our_zombies() -> list[int]:
    me = os.getpid()
    zombies = []
    for name in os.listdir("/proc"):
        if name.isdigit() and stat_of(int(name)) == ("Z", me):
            zombies.append(int(name))
    return zombies


@pytest.fixture(scope="module", autouse=True)
def no_zombies_left() -> Iterator[None]:
    """No zombie child of ours is left behind by this module (earlier modules' orphans,
    reparented to us once a ProcessManager made this process a subreaper, are theirs)."""
    before = set(our_zombies())
    yield
    assert set(our_zombies()) - before == set()


@pytest.fixture(scope="module")
def manager() -> Iterator[ProcessManager]:
    manager = ProcessManager(grace=0.5)
    yield manager
    manager.close()


def start(
    manager: ProcessManager, command: str, cwd: Path, ready: str = "ready"
) -> tuple[threading.Thread, dict[str, CommandOutcome], str]:
    """Run `command` on a thread; return once it printed `ready` (and its output so far)."""
    seen = threading.Event()
    chunks: list[str] = []
    box: dict[str, CommandOutcome] = {}

    def on_output(chunk: str) -> None:
        chunks.append(chunk)
        if ready in "".join(chunks):
            seen.set()

    def target() -> None:
        box["outcome"] = manager.run(
            command, cwd=cwd, timeout=60, cancel=CancelToken(), on_output=on_output
        )

    thread = threading.Thread(target=target)
    thread.start()
    assert seen.wait(10), "the command never got ready"
    return thread, box, "".join(chunks)


# --- the pieces ----------------------------------------------------------------------


def test_parse_stat_survives_odd_command_names() -> None:
    raw = b"4242 (we ) ird (x)) S 17 4242 99 0 -1 4194560 0 0"
    stat = parse_stat(raw)
    assert (stat.pid, stat.state, stat.ppid, stat.pgid, stat.sid) == (4242, "S", 17, 4242, 99)


@pytest.mark.parametrize("line", [b"", b"4242 (sle", b"4242 (sleep) S 1", b"4242 (sleep) S x y z"])
def test_a_process_that_goes_while_scanned_is_left_out(
    line: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stat read empty or cut short (the process ended between the listing and the
    read) leaves that process out of the scan: it must not fail the cleanup after a
    command. A reaped process reads as gone too."""
    with subprocess.Popen(["sleep", "30"]) as child:
        try:
            real = process._read_all

            def cut(path: str) -> bytes | None:
                return line if path == f"/proc/{child.pid}/stat" else real(path)

            monkeypatch.setattr(process, "_read_all", cut)
            assert read_stat(child.pid) is None
            assert child.pid not in Snapshot.scan().stats
            subtree = Snapshot.scan_subtree(os.getpid())
            assert subtree is None or child.pid not in subtree.stats
        finally:
            child.kill()
    assert read_stat(child.pid) is None  # reaped


def test_snapshot_sees_ourselves_and_our_children() -> None:
    with subprocess.Popen(["sleep", "30"]) as child:
        try:
            snapshot = Snapshot.scan()
            assert snapshot.stats[os.getpid()].state in "RS"
            assert child.pid in snapshot.subtree([os.getpid()])
        finally:
            child.kill()


def test_a_subtree_snapshot_holds_our_descendants_and_nothing_else() -> None:
    with subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE) as sh:
        assert sh.stdout is not None
        grandchild = int(sh.stdout.readline())
        try:
            snapshot = Snapshot.scan_subtree(os.getpid())
            if snapshot is None:
                pytest.skip("this kernel has no /proc/PID/task/TID/children")
            assert {os.getpid(), sh.pid, grandchild} <= set(snapshot.stats)
            assert grandchild in snapshot.subtree([sh.pid])
            assert set(snapshot.stats) <= set(Snapshot.scan().stats) - {1}
        finally:
            os.kill(grandchild, 9)
            sh.wait(10)  # sh reaps it in `wait` and ends: no orphaned zombie comes to us


@given(
    st.lists(st.binary(max_size=40), max_size=30),
    st.integers(min_value=0, max_value=50),
    st.integers(min_value=0, max_value=50),
)
def test_head_tail_keeps_both_ends_and_counts_the_cut(
    chunks: list[bytes], head: int, tail: int
) -> None:
    buffer = HeadTail(head, tail)
    for chunk in chunks:
        buffer.feed(chunk)
    data = b"".join(chunks)
    assert buffer.total_bytes == len(data)
    if len(data) <= head + tail:
        assert buffer.cut_bytes == 0
        assert buffer.render() == data.decode("utf-8", "replace")
    else:
        middle = data[head : len(data) - tail]
        newlines = middle.count(b"\n")
        assert (buffer.cut_bytes, buffer.cut_lines) == (len(middle), newlines)
        rendered = buffer.render()
        cut = f"{counted(len(middle), 'byte')} ({counted(newlines, 'newline')})"
        assert f"[… {cut} cut" in rendered
        assert rendered.startswith(data[:head].decode("utf-8", "replace"))
        assert rendered.endswith(data[len(data) - tail :].decode("utf-8", "replace"))


# --- subreaper and reaping -----------------------------------------------------------


def test_orphans_are_reparented_to_us_and_reaped(manager: ProcessManager) -> None:
    assert manager.ensure_subreaper()
    # The shell leaves a short-lived orphan behind; it is not a Popen of anybody's.
    shell = subprocess.run(
        ["sh", "-c", "sleep 0.2 >/dev/null & echo $!"],
        capture_output=True,
        check=True,
        process_group=0,
    )
    orphan = int(shell.stdout)
    reparented = stat_of(orphan)
    assert reparented is not None
    assert reparented[1] == os.getpid()
    assert wait_exit(orphan)
    assert stat_of(orphan) == ("Z", os.getpid())
    assert orphan in manager.reap_orphans()
    assert stat_of(orphan) is None


def test_reaping_never_steals_a_popen_exit_status(manager: ProcessManager) -> None:
    # A plain child of other code (same process group) and one of a running command.
    other = subprocess.Popen(["sh", "-c", "exit 7"])
    assert wait_exit(other.pid)
    assert stat_of(other.pid) == ("Z", os.getpid())
    assert other.pid not in manager.reap_orphans()
    assert other.wait() == 7
    outcome = manager.run("exit 5", cwd=Path.cwd(), timeout=10, cancel=CancelToken())
    assert (outcome.ended, outcome.returncode) == ("exited", 5)


def test_a_cancelled_token_spawns_nothing(manager: ProcessManager, tmp_path: Path) -> None:
    cancel = CancelToken()
    cancel.cancel()
    outcome = manager.run(f"touch {tmp_path}/ran", cwd=tmp_path, timeout=10, cancel=cancel)
    assert outcome.ended == "cancelled"
    assert not (tmp_path / "ran").exists()


def test_output_callback_failure_is_raised_after_cleanup(
    manager: ProcessManager, tmp_path: Path
) -> None:
    def broken(chunk: str) -> None:
        raise RuntimeError("sink broke")

    # 2 MB does not fit the pipe: the pump must keep draining after the sink broke.
    command = "head -c 2000000 /dev/zero; echo $$ > pid"
    with pytest.raises(RuntimeError, match="sink broke"):
        manager.run(command, cwd=tmp_path, timeout=30, cancel=CancelToken(), on_output=broken)
    assert stat_of(int((tmp_path / "pid").read_text())) is None
    assert manager.running() == 0


# --- kill_all ------------------------------------------------------------------------


def test_kill_all_kills_every_tree_at_once(tmp_path: Path) -> None:
    patient = ProcessManager(grace=30.0)  # kill_all must not wait for any grace
    command = (
        "trap '' TERM; sleep 100 & a=$!; setsid sleep 100 & echo $$ $a $! >> pids; "
        'echo "$CODECODER_CALL" >> markers; echo ready; wait'
    )
    runs = [start(patient, command, tmp_path) for _ in range(2)]
    assert patient.running() == 2
    began = time.monotonic()
    assert patient.kill_all() >= 4
    for thread, _, _ in runs:
        thread.join(10)
    patient.close()
    assert time.monotonic() - began < 2.0
    assert patient.running() == 0
    for _, box, _ in runs:
        assert box["outcome"].ended == "killed"
    for marker in (tmp_path / "markers").read_text().split():
        assert marked(marker) == set()
    for pid in (tmp_path / "pids").read_text().split():
        assert stat_of(int(pid)) is None


# --- stdin, stderr apart, extra environment (hooks: issue 18) ----------------------------


def test_stdin_is_fed_and_stderr_kept_apart(tmp_path: Path) -> None:
    manager = ProcessManager()
    try:
        outcome = manager.run(
            'read -r line; echo "out:$line:$HOOK_EVENT"; echo "err:$line" >&2; exit 2',
            cwd=tmp_path,
            timeout=10,
            cancel=CancelToken(),
            stdin=b'{"event": "pre_tool"}\n',
            stderr=True,
            env={"HOOK_EVENT": "pre_tool"},
        )
    finally:
        manager.close()
    assert outcome.returncode == 2
    assert outcome.output == 'out:{"event": "pre_tool"}:pre_tool\n'
    assert outcome.errors == 'err:{"event": "pre_tool"}\n'


def test_a_command_that_never_reads_a_large_stdin_still_ends(tmp_path: Path) -> None:
    manager = ProcessManager()
    try:
        outcome = manager.run(
            "echo done",
            cwd=tmp_path,
            timeout=10,
            cancel=CancelToken(),
            stdin=b"x" * (4 * 1024 * 1024),  # far more than a pipe holds
            stderr=True,
        )
    finally:
        manager.close()
    assert (outcome.ended, outcome.returncode, outcome.output) == ("exited", 0, "done\n")
