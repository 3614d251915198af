"""run_command for real: exit codes, live output, timeouts, cancellation of whole process
trees (background jobs, SIGTERM traps, setsid double forks), leftovers after a normal
exit, 50 MB of output, concurrent commands. Each test that starts processes checks that
every one of them is gone afterwards: by the pids the command wrote down and by a scan
of /proc for the call's environment marker."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, ToolOutput
from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import ToolContext, ToolFailure
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand
from tests.procfs import marked, stat_of

pytestmark = pytest.mark.timeout(120)

GRACE = 0.5
BOUND = 0.2  # 10x the 20 ms cancel-latency target


# --- helpers (independent of the code under test) ------------------------------------


def assert_all_gone(workspace: Path) -> None:
    """Every pid the command recorded is reaped, and nothing carries its marker."""
    pids = [int(pid) for pid in (workspace / "pids").read_text().split()]
    assert pids
    assert {pid: stat_of(pid) for pid in pids} == dict.fromkeys(pids)
    for marker in (workspace / "marker").read_text().split():
        assert marked(marker) == set()


RECORD = 'echo "$CODECODER_CALL" >> marker; '


@pytest.fixture(scope="module", autouse=True)
def no_zombies_left() -> Iterator[None]:
    """No zombie child of ours is left behind by this module (see test_process.py)."""

    def zombies() -> set[int]:
        me = os.getpid()
        return {int(n) for n in os.listdir("/proc") if n.isdigit() and stat_of(int(n)) == ("Z", me)}

    before = zombies()
    yield
    assert zombies() - before == set()


@pytest.fixture(scope="module")
def tool() -> Iterator[RunCommand]:
    manager = ProcessManager(grace=GRACE)
    yield RunCommand(manager)
    manager.close()


class Running:
    """A run_command call on its own thread, with the moment each event arrived."""

    def __init__(self, tool: RunCommand, args: dict[str, Any], ctx: ToolContext) -> None:
        self.events: list[tuple[float, AgentEvent]] = []
        self.ready = threading.Event()
        self._recent = ""
        self.result: ToolResult | None = None
        self.returned_at = 0.0
        self.ctx = ToolContext(ctx.call_id, ctx.cancel, ctx.workspace, self._emit)
        self._thread = threading.Thread(target=self._call, args=(tool, args))
        self._thread.start()

    def _emit(self, event: AgentEvent) -> None:
        self.events.append((time.monotonic(), event))
        if isinstance(event, ToolOutput):
            self._recent = (self._recent + event.chunk)[-16:]
            if "ready" in self._recent:
                self.ready.set()

    @property
    def output(self) -> str:
        return "".join(e.chunk for _, e in self.events if isinstance(e, ToolOutput))

    def _call(self, tool: RunCommand, args: dict[str, Any]) -> None:
        self.result = tool.run(args, self.ctx)
        self.returned_at = time.monotonic()

    def wait_ready(self) -> None:
        assert self.ready.wait(10), f"never ready; output so far: {self.output!r}"

    def join(self) -> ToolResult:
        self._thread.join(30)
        assert not self._thread.is_alive()
        assert self.result is not None
        return self.result


def cancel_after_ready(
    tool: RunCommand, command: str, ctx: ToolContext
) -> tuple[ToolResult, float]:
    """Start `command`, cancel once it printed "ready"; the result and the latency."""
    running = Running(tool, {"command": command}, ctx)
    running.wait_ready()
    cancelled_at = time.monotonic()
    ctx.cancel.cancel()
    result = running.join()
    return result, running.returned_at - cancelled_at


# --- plain runs ----------------------------------------------------------------------


def test_success_reports_output_and_exit_code(tool: RunCommand, ctx: ToolContext) -> None:
    result = tool.run({"command": "echo hello; echo oops >&2"}, ctx)
    assert result.status == "success"
    assert result.text == "hello\noops\n[exit code 0]"


def test_non_zero_exit_is_an_error_result(tool: RunCommand, ctx: ToolContext) -> None:
    result = tool.run({"command": "echo partial; exit 3"}, ctx)
    assert result.status == "error"
    assert result.text == "partial\n[exit code 3]"


def test_a_signal_death_is_named(tool: RunCommand, ctx: ToolContext) -> None:
    result = tool.run({"command": "kill -SEGV $$"}, ctx)
    assert result.status == "error"
    assert result.text.endswith("[killed by signal SIGSEGV]")


def test_output_streams_live_before_the_command_ends(tool: RunCommand, ctx: ToolContext) -> None:
    running = Running(tool, {"command": "echo a; sleep 0.3; echo b"}, ctx)
    result = running.join()
    assert result.text == "a\nb\n[exit code 0]"
    first_at, first = running.events[0]
    assert isinstance(first, ToolOutput)
    assert first.chunk == "a\n"
    assert first.id == ctx.call_id
    assert running.returned_at - first_at >= 0.2


def test_cwd_is_relative_to_the_workspace(
    tool: RunCommand, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "sub" / "dir").mkdir(parents=True)
    result = tool.run({"command": "pwd", "cwd": "sub/dir"}, ctx)
    assert result.text == f"{(workspace / 'sub' / 'dir').resolve()}\n[exit code 0]"
    assert tool.run({"command": "pwd"}, ctx).text.startswith(f"{workspace.resolve()}\n")


@pytest.mark.parametrize(
    ("cwd", "message"),
    [
        ("..", "outside the workspace"),
        ("missing", "not a directory"),
        ("a\0b", "invalid cwd"),
        ("~codecoder-no-such-user-4711", "no such user"),
    ],
)
def test_bad_cwd_is_a_tool_failure(
    tool: RunCommand, ctx: ToolContext, cwd: str, message: str
) -> None:
    with pytest.raises(ToolFailure, match=message) as info:
        tool.run({"command": "true", "cwd": cwd}, ctx)
    assert info.value.error.kind == "invalid_args"


@pytest.mark.parametrize(
    ("command", "message"),
    [("echo a\0b", "contains a NUL character"), ("echo \ud800", "not valid text")],
)
def test_a_command_no_process_can_carry_is_invalid_args(
    tool: RunCommand, ctx: ToolContext, command: str, message: str
) -> None:
    with pytest.raises(ToolFailure, match=message) as info:
        tool.run({"command": command}, ctx)
    assert info.value.error.kind == "invalid_args"


@pytest.mark.parametrize("timeout", [0, -1, 601, "soon"])
def test_bad_timeout_is_rejected(tool: RunCommand, ctx: ToolContext, timeout: object) -> None:
    with pytest.raises(ToolFailure) as info:
        tool.run({"command": "true", "timeout": timeout}, ctx)
    assert info.value.error.kind == "invalid_args"


def test_the_description_states_the_limits(tool: RunCommand) -> None:
    text = tool.description
    assert "Output over 32 KiB keeps its first 16 and last 16 KiB" in text
    assert "(120 by default, at most 600)" in text
    assert "Prefer read_file, grep and glob to cat, grep and find" in text


def test_other_agents_command_shapes_run_as_the_line_they_mean(
    tool: RunCommand, ctx: ToolContext, workspace: Path
) -> None:
    """Codex sends argv lists, Claude Code a `description` and OpenCode `workdir`; a
    list is quoted with shlex.join, so `;` in a word stays text."""
    (workspace / "sub").mkdir()
    assert tool.validate({"command": ["echo", "a; touch pwned"], "description": "say a"}) == {
        "command": "echo 'a; touch pwned'"
    }
    result = tool.run({"command": ["echo", "a; touch pwned"], "workdir": "sub"}, ctx)
    assert result.text == "a; touch pwned\n[exit code 0]"
    assert not (workspace / "sub" / "pwned").exists()
    assert tool.validate({"command": ["ls -a | head -1"], "timeout_ms": "5000"}) == {
        "command": "ls -a | head -1",
        "timeout": 5.0,
    }
    with pytest.raises(ToolFailure, match="a list that is empty or holds more than text"):
        tool.validate({"command": ["echo", 1]})


def test_non_utf8_output_is_replaced_not_fatal(tool: RunCommand, ctx: ToolContext) -> None:
    running = Running(tool, {"command": r"printf 'caf\xc3\xa9 \xff\xfe end\n'"}, ctx)
    result = running.join()
    assert result.text == "café \ufffd\ufffd end\n[exit code 0]"
    assert running.output == "café \ufffd\ufffd end\n"


def test_fifty_megabytes_keep_head_and_tail(tool: RunCommand, ctx: ToolContext) -> None:
    running = Running(
        tool,
        {"command": "echo first; head -c 50000000 /dev/zero | tr '\\0' a; echo; echo last"},
        ctx,
    )
    began = time.monotonic()
    result = running.join()
    assert time.monotonic() - began < 20.0
    assert len(running.output) == 50_000_000 + len("first\n\nlast\n")
    assert result.status == "success"
    assert result.text.startswith("first\naaaa")
    assert result.text.endswith("aaaa\nlast\n[exit code 0]")
    cut = 50_000_012 - 2 * 16 * 1024
    assert f"[… {cut} bytes (0 newlines) cut from the middle …]" in result.text
    assert len(result.text) < 40_000


# --- timeout, cancel, kill -----------------------------------------------------------


def test_timeout_kills_the_tree(tool: RunCommand, ctx: ToolContext, workspace: Path) -> None:
    command = RECORD + "sleep 100 & echo $$ $! > pids; echo started; wait"
    began = time.monotonic()
    result = tool.run({"command": command, "timeout": 0.3}, ctx)
    assert time.monotonic() - began < 0.3 + BOUND * 5
    assert result.status == "error"
    assert result.text == (
        "started\n[timed out after 0.3 s; the command was killed; "
        "give `timeout` up to 600 (seconds) if it needs longer]"
    )
    assert_all_gone(workspace)


def test_cancel_kills_background_jobs_at_once(
    tool: RunCommand, ctx: ToolContext, workspace: Path
) -> None:
    command = RECORD + "sh -c 'sleep 100 & sleep 100 & echo $$ $! > pids; echo ready; wait'"
    result, latency = cancel_after_ready(tool, command, ctx)
    assert result.status == "cancelled"
    assert result.text == "ready\n[cancelled; the command was killed]"
    assert latency <= BOUND
    assert_all_gone(workspace)


def test_cancel_kills_a_command_that_traps_sigterm(
    tool: RunCommand, ctx: ToolContext, workspace: Path
) -> None:
    command = RECORD + "trap '' TERM; sleep 100 & echo $$ $! > pids; echo ready; wait"
    result, latency = cancel_after_ready(tool, command, ctx)
    assert result.status == "cancelled"
    assert GRACE <= latency <= GRACE + BOUND
    assert_all_gone(workspace)


def test_cancel_kills_setsid_double_forks(
    tool: RunCommand, ctx: ToolContext, workspace: Path
) -> None:
    command = RECORD + (
        # an orphan in a session of its own: marker, output pipe
        "setsid sh -c 'sleep 100 & echo $! >> pids'; "
        # the same with its output elsewhere: only the marker tells
        "(setsid sleep 100 >/dev/null 2>&1 & echo $! >> pids); "
        # an orphan without the marker: only the output pipe tells
        "env -i setsid sh -c 'sleep 100 & echo $! >> pids'; "
        # no marker, no pipe, own session: only its ppid (the live shell) tells
        "env -i setsid sleep 100 >/dev/null 2>&1 & echo $! >> pids; "
        "echo $$ >> pids; echo ready; sleep 100"
    )
    result, latency = cancel_after_ready(tool, command, ctx)
    assert result.status == "cancelled"
    assert latency <= BOUND
    assert len((workspace / "pids").read_text().split()) == 5
    assert_all_gone(workspace)


def test_leftover_background_processes_die_with_the_command(
    tool: RunCommand, ctx: ToolContext, workspace: Path
) -> None:
    command = RECORD + (
        "sleep 100 & echo $! >> pids; (setsid sleep 100 & echo $! >> pids); "
        "env -i setsid sleep 100 & echo $! >> pids; echo $$ >> pids; echo done"
    )
    began = time.monotonic()
    result = tool.run({"command": command}, ctx)
    assert time.monotonic() - began < BOUND * 5
    assert result.status == "success"
    assert result.text == "done\n[exit code 0]"
    assert_all_gone(workspace)


def test_two_commands_stay_apart_when_one_is_cancelled(
    tool: RunCommand, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a").mkdir()
    (workspace / "b").mkdir()
    doomed = ToolContext("call_a", CancelToken(), workspace, lambda event: None)
    kept = ToolContext("call_b", CancelToken(), workspace, lambda event: None)
    record = RECORD + "sleep 100 & echo $$ $! > pids; "
    a = Running(tool, {"command": record + "echo ready; wait", "cwd": "a"}, doomed)
    b = Running(tool, {"command": record + "echo ready; sleep 1; echo b done", "cwd": "b"}, kept)
    a.wait_ready()
    b.wait_ready()
    doomed.cancel.cancel()
    assert a.join().status == "cancelled"
    assert_all_gone(workspace / "a")
    assert b.result is None  # still running, untouched by the other's kill
    assert marked((workspace / "b" / "marker").read_text().strip())
    result = b.join()
    assert result.status == "success"
    assert result.text == "ready\nb done\n[exit code 0]"
    assert_all_gone(workspace / "b")


def test_kill_all_stops_running_commands(workspace: Path) -> None:
    manager = ProcessManager(grace=30.0)
    ctx = ToolContext("call_k", CancelToken(), workspace, lambda event: None)
    running = Running(
        RunCommand(manager),
        {"command": RECORD + "trap '' TERM; sleep 100 & echo $$ $! > pids; echo ready; wait"},
        ctx,
    )
    running.wait_ready()
    killed_at = time.monotonic()
    manager.kill_all()
    result = running.join()
    manager.close()
    assert running.returned_at - killed_at <= BOUND * 5
    assert result.status == "error"
    assert result.text.endswith("[killed: all running commands were stopped]")
    assert_all_gone(workspace)
