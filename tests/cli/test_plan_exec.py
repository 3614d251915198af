"""`codecoder exec --plan` as users and scripts run it: a real subprocess on the scripted
provider, real gate processes, real signals, the session store read back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.sessions import SessionStore
from tests.cli.test_signals import leave_nothing, tree_command, wait_for_pids
from tests.procfs import alive
from tests.sandbox.conftest import needs_bwrap

pytestmark = pytest.mark.timeout(90)

CLI = [sys.executable, "-m", "codecoder"]
FULL_AUTO = ("--approval", "full-auto")
__all__ = ["leave_nothing"]  # a fixture this module uses


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def script(tmp_path: Path, replies: list[Any], name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


def write(path: str, content: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "write_file", "args": {"path": path, "content": content}}


def plan_file(tmp_path: Path, text: str, name: str = "PLAN.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def argv(plan: Path, replies: Path, ws: Path, *more: str) -> list[str]:
    return [*CLI, "exec", "--plan", str(plan), "--script", str(replies), "-C", str(ws), *more]


def run_plan(
    plan: Path, replies: Path, ws: Path, *more: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(plan, replies, ws, *more),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


def lines_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


PLAN_TYPES = {"milestone_started", "gate_started", "gate_finished", "milestone_finished"}


def plan_lines(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The plan's own lines, short: what a reader of the stream follows."""
    out: list[tuple[Any, ...]] = []
    for line in lines:
        kind = line["type"]
        if kind == "milestone_started":
            out.append(("started", line["milestone"], line["attempt"]))
        elif kind == "gate_started":
            out.append(("gate", line["milestone"], line["index"], line["command"]))
        elif kind == "gate_finished":
            out.append(("gate_done", line["milestone"], line["index"], line["exit_code"]))
        elif kind == "milestone_finished":
            out.append(("finished", line["milestone"], line["status"], line["attempts"]))
        elif kind == "plan_finished":
            out.append(("plan", line["status"], line["passed"], line["total"]))
    return out


def user_messages(session_id: str) -> list[str]:
    with SessionStore() as store:  # $XDG_DATA_HOME of the test, as the child saw it
        return [m.text for m in store.load_messages(session_id) if m.role == "user"]


FIX_ONCE = """\
title = "Fix a.txt"
max_attempts = 3

[[milestones]]
name = "fix"
task = "Make a.txt say fixed."
gates = [
    "test -f a.txt",
    "grep -q fixed a.txt || { echo MARK-7f3 a.txt says $(cat a.txt); exit 3; }",
]

[[milestones]]
name = "notes"
task = "Write NOTES.md."
gates = ["test -s NOTES.md"]
"""


def test_a_gate_that_fails_once_then_passes_after_the_fix(tmp_path: Path, ws: Path) -> None:
    replies = [
        [write("a.txt", "broken")],
        ["Wrote a.txt."],
        [write("a.txt", "fixed")],
        ["Fixed it."],
        [write("NOTES.md", "notes")],
        ["Notes written."],
    ]
    result = run_plan(
        plan_file(tmp_path, FIX_ONCE), script(tmp_path, replies), ws, "--json", *FULL_AUTO
    )
    assert result.returncode == 0, result.stderr
    lines = lines_of(result.stdout)
    assert lines[0]["type"] == "session"
    fix_gate = "grep -q fixed a.txt || { echo MARK-7f3 a.txt says $(cat a.txt); exit 3; }"
    assert plan_lines(lines) == [
        ("started", "fix", 1),
        ("gate", "fix", 0, "test -f a.txt"),
        ("gate_done", "fix", 0, 0),
        ("gate", "fix", 1, fix_gate),
        ("gate_done", "fix", 1, 3),
        ("started", "fix", 2),
        ("gate", "fix", 0, "test -f a.txt"),
        ("gate_done", "fix", 0, 0),
        ("gate", "fix", 1, fix_gate),
        ("gate_done", "fix", 1, 0),
        ("finished", "fix", "passed", 2),
        ("started", "notes", 1),
        ("gate", "notes", 0, "test -s NOTES.md"),
        ("gate_done", "notes", 0, 0),
        ("finished", "notes", "passed", 1),
        ("plan", "passed", 2, 2),
    ]
    assert lines[-1]["type"] == "plan_finished"
    failed = next(line for line in lines if line.get("exit_code") == 3)
    assert failed["output_tail"] == "MARK-7f3 a.txt says broken\n"
    assert isinstance(failed["duration_ms"], int)
    # each turn's lines carry its number; the gates carry the turn they checked
    assert [line["turn"] for line in lines if line["type"] == "done"] == [1, 2, 3]
    assert {line["turn"] for line in lines if line["type"] == "gate_finished"} == {1, 2, 3}
    messages = user_messages(lines[0]["session_id"])
    assert len(messages) == 3
    assert "MARK-7f3 a.txt says broken" in messages[1]  # the gate's output reached the model
    assert "exited with code 3" in messages[1] and "attempt 2 of 3" in messages[1]
    assert (ws / "a.txt").read_text() == "fixed"


NEVER = """\
max_attempts = 2

[[milestones]]
name = "never"
task = "Try."
gates = ["echo still failing; exit 4"]

[[milestones]]
name = "later"
task = "Must never start."
gates = ["touch later-gate-ran"]
"""


def test_a_gate_that_never_passes_stops_the_plan_after_max_attempts(
    tmp_path: Path, ws: Path
) -> None:
    replies = [["First try."], ["Second try."], ["A third reply nobody asks for."]]
    result = run_plan(plan_file(tmp_path, NEVER), script(tmp_path, replies), ws, "--json")
    assert result.returncode == 1, result.stderr
    lines = lines_of(result.stdout)
    assert plan_lines(lines) == [
        ("started", "never", 1),
        ("gate", "never", 0, "echo still failing; exit 4"),
        ("gate_done", "never", 0, 4),
        ("started", "never", 2),
        ("gate", "never", 0, "echo still failing; exit 4"),
        ("gate_done", "never", 0, 4),
        ("finished", "never", "failed", 2),
        ("plan", "failed", 0, 2),
    ]
    assert not any(line.get("milestone") == "later" for line in lines)
    assert not (ws / "later-gate-ran").exists()
    assert result.stderr.strip().splitlines()[-1] == (
        "codecoder: milestone 'never' failed after 2 attempts: gate 1, "
        "`echo still failing; exit 4`, exited with code 4"
    )
    with SessionStore() as store:
        run = store.latest_plan_run(ws, str((tmp_path / "PLAN.toml").resolve()))
    assert run is not None and run.status == "failed"
    assert [(m.name, m.status, m.attempts) for m in run.milestones] == [
        ("never", "failed", 2),
        ("later", "pending", 0),
    ]


def test_gates_run_one_after_another_and_the_first_failure_ends_the_chain(
    tmp_path: Path, ws: Path
) -> None:
    log = tmp_path / "gates.log"
    gate = f"echo start {{n}} >> {log}; sleep 0.3; echo end {{n}} >> {log}"
    gates = [gate.format(n=1), gate.format(n=2), f"{gate.format(n=3)}; exit 1", gate.format(n=4)]
    text = (
        f'max_attempts = 1\n[[milestones]]\nname = "m"\ntask = "t"\ngates = {json.dumps(gates)}\n'
    )
    result = run_plan(plan_file(tmp_path, text), script(tmp_path, [["ok"]]), ws, "--json")
    assert result.returncode == 1, result.stderr
    assert log.read_text().split("\n")[:-1] == [
        "start 1",
        "end 1",
        "start 2",
        "end 2",
        "start 3",
        "end 3",
    ]  # never two at once, and gate 4 never ran
    lines = lines_of(result.stdout)
    gate_lines = [line for line in lines if line["type"] in ("gate_started", "gate_finished")]
    assert [(line["type"], line["index"]) for line in gate_lines] == [
        ("gate_started", 0),
        ("gate_finished", 0),
        ("gate_started", 1),
        ("gate_finished", 1),
        ("gate_started", 2),
        ("gate_finished", 2),
    ]
    assert all(line["duration_ms"] >= 290 for line in gate_lines if "duration_ms" in line)
    done = next(i for i, line in enumerate(lines) if line["type"] == "done")
    first_gate = next(i for i, line in enumerate(lines) if line["type"] == "gate_started")
    assert done < first_gate  # the turn is over before its checks begin


def test_sigint_during_a_gate_kills_its_tree_and_exits_130(
    tmp_path: Path, ws: Path, leave_nothing: list[int]
) -> None:
    pidfile = tmp_path / "pids"
    text = (
        '[[milestones]]\nname = "m"\ntask = "t"\n'
        f"gates = {json.dumps([tree_command(pidfile), 'touch after-gate'])}\n"
        '[[milestones]]\nname = "n"\ntask = "t"\n'
    )
    replies = script(tmp_path, [["Done."], ["never"]])
    proc = subprocess.Popen(
        argv(plan_file(tmp_path, text), replies, ws, "--json"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids = wait_for_pids(pidfile, leave_nothing)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert not any(alive(pid) for pid in pids)  # dead before exec returned
    lines = lines_of(out)
    assert plan_lines(lines)[-3:] == [
        ("gate_done", "m", 0, None),
        ("finished", "m", "cancelled", 1),
        ("plan", "cancelled", 0, 2),
    ]
    assert not (ws / "after-gate").exists()
    assert "Traceback" not in err
    with SessionStore() as store:
        run = store.latest_plan_run(ws, str((tmp_path / "PLAN.toml").resolve()))
    assert run is not None and run.status == "cancelled"
    assert [(m.name, m.status) for m in run.milestones] == [("m", "cancelled"), ("n", "pending")]


THREE = """\
[[milestones]]
name = "one"
task = "Write one.txt."
gates = ["test -f one.txt"]

[[milestones]]
name = "two"
task = "Write two.txt."
gates = ["test -f two.txt"]

[[milestones]]
name = "three"
task = "Write three.txt."
gates = ["test -f three.txt"]
"""


@pytest.fixture
def killed_mid_plan(tmp_path: Path, ws: Path) -> Iterator[tuple[Path, str]]:
    """A plan run SIGKILLed during the turn of its second milestone: (the plan, the
    session id)."""
    plan = plan_file(tmp_path, THREE)
    first = script(
        tmp_path,
        [[write("one.txt", "1")], ["One done."], [{"type": "sleep", "seconds": 60}]],
        "first.json",
    )
    proc = subprocess.Popen(
        argv(plan, first, ws, "--json", *FULL_AUTO),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        session_id = json.loads(proc.stdout.readline())["session_id"]
        for raw in proc.stdout:
            line = json.loads(raw)
            if line["type"] == "milestone_started" and line["milestone"] == "two":
                break
        else:
            raise AssertionError(f"the plan never reached milestone two: {proc.stderr}")
        time.sleep(0.2)  # inside the turn's silence
        proc.kill()
        proc.communicate(timeout=15)
        assert proc.returncode == -signal.SIGKILL
        yield plan, session_id
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_continue_after_a_sigkill_resumes_at_the_milestone_it_was_in(
    tmp_path: Path, ws: Path, killed_mid_plan: tuple[Path, str]
) -> None:
    plan, session_id = killed_mid_plan
    with SessionStore() as store:
        found = store.latest_plan_run(ws, str(plan.resolve()))
    assert found is not None and found.status == "running"  # killed: never finished
    assert found.passed == ("one",)
    second = script(
        tmp_path,
        [[write("two.txt", "2")], ["Two done."], [write("three.txt", "3")], ["Three done."]],
        "second.json",
    )
    result = run_plan(plan, second, ws, "--continue", "--json", *FULL_AUTO)
    assert result.returncode == 0, result.stderr
    lines = lines_of(result.stdout)
    assert lines[0]["session_id"] == session_id  # the run's own session goes on
    assert plan_lines(lines) == [
        ("started", "one", 0),
        ("gate", "one", 0, "test -f one.txt"),
        ("gate_done", "one", 0, 0),
        ("finished", "one", "passed", 0),
        ("started", "two", 1),
        ("gate", "two", 0, "test -f two.txt"),
        ("gate_done", "two", 0, 0),
        ("finished", "two", "passed", 1),
        ("started", "three", 1),
        ("gate", "three", 0, "test -f three.txt"),
        ("gate_done", "three", 0, 0),
        ("finished", "three", "passed", 1),
        ("plan", "passed", 3, 3),
    ]
    # turns go on counting: 1 (one) and 2 (two, killed) before, then 3 and 4
    started = [line["turn"] for line in lines if line["type"] == "milestone_started"]
    assert started == [2, 3, 4]
    assert "changed" not in result.stderr
    messages = user_messages(session_id)
    assert [m.splitlines()[0] for m in messages] == [
        "Milestone 1 of 3: one",
        "Milestone 2 of 3: two",
        "Milestone 2 of 3: two",
        "Milestone 3 of 3: three",
    ]


def test_continue_names_a_changed_plan_and_reworks_a_gate_that_now_fails(
    tmp_path: Path, ws: Path, killed_mid_plan: tuple[Path, str]
) -> None:
    plan, _ = killed_mid_plan
    (ws / "one.txt").unlink()  # what milestone one made is gone
    plan.write_text(THREE.replace("Write two.txt.", "Write two.txt, please."))
    replies = [[write("one.txt", "again")], ["One again."], ["Two."], ["Three."]]
    result = run_plan(plan, script(tmp_path, replies, "again.json"), ws, "--continue", *FULL_AUTO)
    assert result.returncode == 1, result.stderr  # two.txt never written: two fails
    assert f"warning: {plan} has changed since its run of" in result.stderr
    assert "● milestone 1/3 one: checking the earlier run's work" in result.stderr
    assert "● milestone 1/3 one (attempt 1 of 3)" in result.stderr
    assert "✓ one passed (1 attempt)" in result.stderr


def test_continue_without_an_earlier_run_is_refused(tmp_path: Path, ws: Path) -> None:
    plan = plan_file(tmp_path, THREE)
    result = run_plan(plan, script(tmp_path, [["x"]]), ws, "--continue")
    assert result.returncode == 2
    assert result.stderr == f"codecoder: no run of {plan.resolve()} to continue in {ws}\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "PLAN.toml: the plan has no milestones"),
        (THREE + 'colour = "red"\n', 'PLAN.toml:15: milestone 3 ("three"): unknown key `colour`'),
        (
            THREE.replace('"three"', '"one"'),
            'PLAN.toml:12: milestones 1 and 3 are both named "one"',
        ),
        (
            THREE.replace('["test -f two.txt"]', '["true", 2]'),
            'PLAN.toml:9: milestone 2 ("two"): gate 2 must be a command string (it is 2)',
        ),
        ("max_attempts = 0\n" + THREE, "PLAN.toml:1: max_attempts must be a whole number"),
        ("[[milestones]\n", "PLAN.toml: not valid TOML"),
    ],
)
def test_a_malformed_plan_is_refused_before_anything_runs(
    tmp_path: Path, ws: Path, text: str, problem: str
) -> None:
    plan = plan_file(tmp_path, text)
    result = subprocess.run(
        [*CLI, "exec", "--plan", "PLAN.toml", "--script", str(script(tmp_path, [["x"]]))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"codecoder: {problem}"), line
    assert plan.exists()
    with SessionStore() as store:
        assert store.list_sessions() == []  # no session: nothing ran


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["exec", "--plan", "P.toml", "a task"], "--plan runs the plan's tasks: give no TASK"),
        (["exec"], "give the TASK (or - to read it from standard input), or --plan FILE"),
        (["exec", "--plan", "P.toml", "--resume", "abcdefgh"], "--plan goes on with --continue"),
    ],
)
def test_usage_errors_of_plan_runs(tmp_path: Path, args: list[str], problem: str) -> None:
    plan_file(tmp_path, THREE, "P.toml")
    result = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, cwd=tmp_path, timeout=30, check=False
    )
    assert result.returncode == 2
    assert problem in result.stderr


def test_without_json_progress_goes_to_stderr_and_answers_to_stdout(
    tmp_path: Path, ws: Path
) -> None:
    text = (
        'max_attempts = 2\n[[milestones]]\nname = "m"\ntask = "t"\n'
        'gates = ["test -f done.txt || { echo line one; echo line two; exit 5; }"]\n'
    )
    replies = [["First answer."], [write("done.txt", "x")], ["Second answer."]]
    result = run_plan(plan_file(tmp_path, text), script(tmp_path, replies), ws, *FULL_AUTO)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "First answer.\nSecond answer.\n"
    err = [line for line in result.stderr.splitlines() if not line.startswith("codecoder: ")]
    assert err[0] == "● milestone 1/1 m (attempt 1 of 2)"
    assert err[1] == "  gate 1/1: test -f done.txt || { echo line one; echo line two; exit 5; }"
    assert err[2].startswith("    ✗ exited with code 5 after ")
    assert err[3:5] == ["    │ line one", "    │ line two"]
    assert err[5] == "● milestone 1/1 m (attempt 2 of 2)"
    assert err[-2:] == ["✓ m passed (2 attempts)", "plan passed: 1 of 1 milestones passed"]


def test_gates_run_in_every_approval_mode_since_the_user_wrote_them(
    tmp_path: Path, ws: Path
) -> None:
    text = '[[milestones]]\nname = "m"\ntask = "t"\ngates = ["touch made-by-gate"]\n'
    result = run_plan(
        plan_file(tmp_path, text), script(tmp_path, [["ok"]]), ws, "--approval", "read-only"
    )
    assert result.returncode == 0, result.stderr
    assert (ws / "made-by-gate").exists()


def test_a_gate_sees_no_secret_of_the_environment(tmp_path: Path, ws: Path) -> None:
    text = '[[milestones]]\nname = "m"\ntask = "t"\ngates = ["env > env.txt"]\n'
    env = {**os.environ, "MY_API_KEY": "sk-secret-123"}
    subprocess.run(
        argv(plan_file(tmp_path, text), script(tmp_path, [["ok"]]), ws),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert "sk-secret-123" not in (ws / "env.txt").read_text()


def test_the_trace_holds_the_plan_events_in_the_order_the_face_saw(
    tmp_path: Path, ws: Path
) -> None:
    from codecoder.kernel.trace import Tracer

    trace = tmp_path / "trace.jsonl"
    text = '[[milestones]]\nname = "m"\ntask = "t"\ngates = ["true", "true"]\n'
    result = run_plan(
        plan_file(tmp_path, text), script(tmp_path, [["ok"]]), ws, "--json", "--trace", str(trace)
    )
    assert result.returncode == 0, result.stderr
    shown = [line["type"] for line in lines_of(result.stdout)[1:]]
    records = sorted(Tracer.read(trace), key=lambda record: record["seq"])
    events = [r for r in records if r["dir"] == "event"]
    assert [r["data"]["type"] for r in events] == shown  # one order: the stream's
    plan = [r for r in events if r["agent"] == "plan"]
    assert [r["data"]["type"] for r in plan] == [
        "milestone_started",
        "gate_started",
        "gate_finished",
        "gate_started",
        "gate_finished",
        "milestone_finished",
        "plan_finished",
    ]
    assert all(r["thread"] == "plan-runner" for r in plan)


def test_sigterm_during_a_turn_cancels_the_plan_and_exits_143(tmp_path: Path, ws: Path) -> None:
    text = '[[milestones]]\nname = "m"\ntask = "t"\ngates = ["touch gate-ran"]\n'
    replies = script(tmp_path, [[{"type": "sleep", "seconds": 60}]])
    proc = subprocess.Popen(
        argv(plan_file(tmp_path, text), replies, ws, "--json"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            if json.loads(raw)["type"] == "milestone_started":
                break
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, err
    assert time.monotonic() - started < 5
    lines = lines_of(out)
    assert [line["type"] for line in lines[-3:]] == ["done", "milestone_finished", "plan_finished"]
    assert lines[-3]["reason"] == "cancelled" and lines[-1]["status"] == "cancelled"
    assert not (ws / "gate-ran").exists()


@needs_bwrap
def test_gates_run_in_the_sandbox_of_the_commands(tmp_path: Path, ws: Path) -> None:
    """full-auto confines commands (workspace-write where bwrap works), and gates too."""
    outside = Path("/var/tmp") / f"codecoder-gate-{uuid.uuid4().hex}"
    text = (
        'max_attempts = 1\n[[milestones]]\nname = "m"\ntask = "t"\n'
        f'gates = ["touch inside.txt", "touch {outside}"]\n'
    )
    try:
        result = run_plan(
            plan_file(tmp_path, text), script(tmp_path, [["ok"]]), ws, "--json", *FULL_AUTO
        )
        assert result.returncode == 1, result.stderr
        finished = [line for line in lines_of(result.stdout) if line["type"] == "gate_finished"]
        assert [line["exit_code"] for line in finished] == [0, 1]
        assert "Read-only file system" in finished[1]["output_tail"]
        assert (ws / "inside.txt").exists() and not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
