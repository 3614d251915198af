"""The sandbox through `codecoder exec` as users run it (a real subprocess): full-auto's
default, `--sandbox`, `[sandbox]` in the config, escalation (asked, denied headless,
allowed by a rule or an answer), the notice where bwrap cannot run, signals and SIGKILL
with confined commands, and `codecoder doctor`."""

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

from codecoder import paths
from tests.checkpoints.helpers import logged, logging_git, undo
from tests.procfs import alive, kill, pids, read

from .conftest import needs_bwrap

pytestmark = pytest.mark.timeout(120)

CLI = [sys.executable, "-m", "codecoder"]
FULL_AUTO = ("--approval", "full-auto")


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def script(tmp_path: Path, replies: list[Any]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


def exec_argv(tmp_path: Path, ws: Path, replies: list[Any], *extra: str) -> list[str]:
    path = script(tmp_path, replies)
    return [*CLI, "exec", "--json", "--script", str(path), "-C", str(ws), *extra, "go"]


def run_exec(
    tmp_path: Path,
    ws: Path,
    replies: list[Any],
    *extra: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        exec_argv(tmp_path, ws, replies, *extra),
        capture_output=True,
        text=True,
        timeout=60,
        input=input,
        env=env,
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def finished(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == "tool_finished"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def failing_bwrap(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH finds a bwrap that fails as it does where user
    namespaces are switched off."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because "
        "the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


def writer(ws: Path, target: Path) -> str:
    """A command that writes `target` in a way the permission check cannot see (a script
    in the workspace): only the sandbox stands in its way."""
    (ws / "write.sh").write_text(f"echo out > {target}\n")
    return "sh write.sh"


def write_config(text: str) -> None:
    folder = paths.config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)


# --- the default and the flag --------------------------------------------------------------


@needs_bwrap
def test_full_auto_confines_commands_by_default(tmp_path: Path, ws: Path) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    replies = [
        [call("run_command", command="echo in > in.txt")],
        [call("run_command", command=writer(ws, beside / "out.txt"))],
        ["done"],
    ]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO)
    assert code == 0, err
    first, second = finished(lines)
    assert first["status"] == "success"
    assert (ws / "in.txt").read_text() == "in\n"
    assert second["status"] == "error"
    assert "[sandbox:" in second["content"]
    assert not (beside / "out.txt").exists()
    assert "without a sandbox" not in err


@needs_bwrap
def test_full_auto_checkpoints_the_lines_that_write_and_undo_restores_them(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines that only read run read-only and take no checkpoint (no git process of
    ours around them); the line that writes does, and `undo` takes its change back."""
    log = logging_git(tmp_path, monkeypatch)
    (ws / "README.md").write_text("hello\n")
    replies = [
        [call("run_command", command="cat README.md | wc -l; ls")],
        [call("run_command", command="git status --short")],
        [call("run_command", command="echo made > made.txt")],
        ["done"],
    ]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO)
    assert code == 0, err
    assert [line["status"] for line in finished(lines)] == ["success"] * 3
    assert (ws / "made.txt").read_text() == "made\n"
    ours = logged(log)  # the confined commands' git is not ours: not logged
    assert ours.count("diff-files") == 2 and ours.count("diff-index") == 1, ours
    assert undo(ws).returncode == 0
    assert not (ws / "made.txt").exists()
    assert (ws / "README.md").read_text() == "hello\n"


def test_sandbox_off_runs_full_auto_unconfined(tmp_path: Path, ws: Path) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    replies = [[call("run_command", command=writer(ws, beside / "out.txt"))], ["done"]]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO, "--sandbox", "off")
    assert code == 0, err
    assert finished(lines)[0]["status"] == "success"
    assert (beside / "out.txt").read_text() == "out\n"


@needs_bwrap
def test_the_config_mode_applies_in_any_approval_mode(tmp_path: Path, ws: Path) -> None:
    write_config('[sandbox]\nmode = "read-only"\n\n[permissions]\nallow = ["run_command"]\n')
    replies = [[call("run_command", command="touch new.txt")], ["done"]]
    code, lines, err = run_exec(tmp_path, ws, replies)  # never-ask; the rule allows it
    assert code == 0, err
    assert finished(lines)[0]["status"] == "error"
    assert "read-only mode" in finished(lines)[0]["content"]
    assert not (ws / "new.txt").exists()
    code, lines, err = run_exec(tmp_path, ws, replies, "--sandbox", "off")  # the flag wins
    assert finished(lines)[0]["status"] == "success", err
    assert (ws / "new.txt").exists()


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ('[sandbox]\nmode = "strict"\n', "[sandbox] mode must be one of"),
        ("[sandbox]\nnetwork_alow = []\n", "did you mean `network_allow`?"),
        ('[sandbox]\nnetwork_allow = ["npm *"]\n', "bad permission rule"),
    ],
)
def test_a_bad_sandbox_table_is_a_usage_error(
    tmp_path: Path, ws: Path, config: str, fragment: str
) -> None:
    write_config(config)
    code, _, err = run_exec(tmp_path, ws, [["hi"]], *FULL_AUTO)
    assert code == 2
    assert fragment in err
    assert len(err.strip().splitlines()) == 1


# --- where bwrap cannot run ------------------------------------------------------------------


def test_full_auto_without_bwrap_says_so_once(
    tmp_path: Path, ws: Path, failing_bwrap: dict[str, str]
) -> None:
    replies = [
        [call("run_command", command="echo one")],
        [call("run_command", command="echo two")],
        ["done"],
    ]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO, env=failing_bwrap)
    assert code == 0, err
    notices = [line for line in lines if line["type"] == "status_update"]
    notices = [line for line in notices if line["notice"] == "sandbox"]
    assert len(notices) == 1
    assert "commands run without a sandbox" in notices[0]["detail"]
    assert "cannot create namespaces" in notices[0]["detail"]
    assert err.count("commands run without a sandbox") == 1
    assert [f["status"] for f in finished(lines)] == ["success", "success"]


def test_an_explicit_sandbox_without_bwrap_refuses_to_start(
    tmp_path: Path, ws: Path, failing_bwrap: dict[str, str]
) -> None:
    code, lines, err = run_exec(
        tmp_path, ws, [["hi"]], "--sandbox", "workspace-write", env=failing_bwrap
    )
    assert code == 2
    assert lines == []
    assert "the sandbox (--sandbox: workspace-write) cannot run" in err
    assert "--sandbox off" in err


def test_other_approval_modes_run_unconfined_and_say_nothing(
    tmp_path: Path, ws: Path, failing_bwrap: dict[str, str]
) -> None:
    write_config('[permissions]\nallow = ["run_command(echo:*)"]\n')
    code, lines, err = run_exec(
        tmp_path, ws, [[call("run_command", command="echo hi")], ["done"]], env=failing_bwrap
    )
    assert code == 0, err
    assert finished(lines)[0]["status"] == "success"
    assert not [line for line in lines if line.get("notice") == "sandbox"]
    assert "sandbox" not in err


# --- escalation ----------------------------------------------------------------------------


def test_a_headless_escalation_is_denied(tmp_path: Path, ws: Path) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    command = writer(ws, beside / "x")
    replies = [[call("run_command", command=command, sandbox=False)], ["done"]]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO)
    assert code == 0, err
    result = finished(lines)[0]
    assert result["error"]["kind"] == "denied"
    asked = [line for line in lines if line["type"] == "confirm_request"]
    assert len(asked) == 1 and "outside the sandbox" in asked[0]["reason"]
    assert not (beside / "x").exists()
    code, lines, err = run_exec(tmp_path, ws, replies)  # never-ask: denied with the reason
    assert "outside the sandbox" in finished(lines)[0]["error"]["message"]


def test_an_unsandboxed_rule_lets_a_headless_escalation_run(tmp_path: Path, ws: Path) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    write_config('[permissions]\nallow = ["unsandboxed(sh write.sh)"]\n')
    command = writer(ws, beside / "x")
    replies = [[call("run_command", command=command, sandbox=False)], ["done"]]
    code, lines, err = run_exec(tmp_path, ws, replies, *FULL_AUTO)
    assert code == 0, err
    assert finished(lines)[0]["status"] == "success", finished(lines)[0]
    assert (beside / "x").exists()


@needs_bwrap
def test_an_escalation_asks_and_an_allowed_one_runs_outside_the_sandbox(
    tmp_path: Path, ws: Path
) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    command = writer(ws, beside / "x")
    replies = [
        [call("run_command", command=command)],
        [call("run_command", command=command, sandbox=False)],
        ["done"],
    ]
    proc = subprocess.Popen(
        [*exec_argv(tmp_path, ws, replies, *FULL_AUTO, "--stdin-replies")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["type"] == "confirm_request":
            break
    request = seen[-1]
    assert request["type"] == "confirm_request"
    assert request["tool_call"]["args"]["sandbox"] is False
    assert "outside the sandbox" in request["reason"]
    assert [f["status"] for f in finished(seen)] == ["error"]  # confined: it could not write
    assert not (beside / "x").exists()
    reply = {"type": "reply", "request_id": request["request_id"], "decision": "allow_once"}
    out, err = proc.communicate(json.dumps(reply) + "\n", timeout=30)
    assert proc.returncode == 0, err
    rest = [json.loads(line) for line in out.splitlines()]
    assert [f["status"] for f in finished(rest)] == ["success"]
    assert (beside / "x").read_text() == "out\n"


# --- signals -------------------------------------------------------------------------------


@pytest.fixture
def tag() -> Iterator[str]:
    """A name for a test's processes; whatever happens, none is left running."""
    name = f"sandboxed-{uuid.uuid4().hex}"
    yield name
    for pid in running(name):
        kill(pid)


def running(name: str) -> list[int]:
    """Live processes whose argv[0] starts with `name` (bwrap's own command line holds
    the whole script, so a plain search would find bwrap too)."""
    return [
        pid
        for pid in pids()
        if read(pid, "cmdline").split(b"\0")[0].startswith(name.encode()) and alive(pid)
    ]


def wait_for(predicate: Any, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def tree(tag: str) -> str:
    """A confined command that leaves three processes of `tag` running: two in the
    background, one escaped with setsid."""
    return (
        f"bash -c 'exec -a {tag}-a sleep 300' & bash -c 'exec -a {tag}-b sleep 300' & "
        f"setsid bash -c 'exec -a {tag}-c sleep 300' </dev/null >/dev/null 2>&1 & wait"
    )


@needs_bwrap
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_kills_every_process_of_a_confined_command(
    tmp_path: Path, ws: Path, tag: str, sig: signal.Signals
) -> None:
    proc = subprocess.Popen(
        exec_argv(tmp_path, ws, [[call("run_command", command=tree(tag))], ["x"]], *FULL_AUTO),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_for(lambda: len(running(tag)) == 3, 10), running(tag)
    sent = time.monotonic()
    proc.send_signal(sig)
    proc.communicate(timeout=15)
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig]
    assert time.monotonic() - sent < 5
    assert running(tag) == []


@needs_bwrap
def test_a_sigkilled_exec_leaves_no_confined_process(tmp_path: Path, ws: Path, tag: str) -> None:
    proc = subprocess.Popen(
        exec_argv(tmp_path, ws, [[call("run_command", command=tree(tag))], ["x"]], *FULL_AUTO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_for(lambda: len(running(tag)) == 3, 10), running(tag)
    proc.kill()
    proc.wait(timeout=10)
    assert wait_for(lambda: running(tag) == [], 5.0), running(tag)


# --- doctor --------------------------------------------------------------------------------


def doctor(env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [*CLI, "doctor", "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**(env or os.environ), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
        check=False,
    )
    return done.returncode, done.stdout


def sandbox_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.split()[1:2] == ["sandbox"])


@needs_bwrap
def test_doctor_says_the_sandbox_works() -> None:
    _, out = doctor()
    line = sandbox_line(out)
    assert line.startswith("ok")
    assert "bubblewrap" in line


def test_doctor_says_why_the_sandbox_cannot_run(failing_bwrap: dict[str, str]) -> None:
    _, out = doctor(failing_bwrap)
    line = sandbox_line(out)
    assert line.startswith("off")
    assert "cannot create namespaces" in line and "parser-only" in line
    write_config('[sandbox]\nmode = "workspace-write"\n')
    code, out = doctor(failing_bwrap)
    assert sandbox_line(out).startswith("FAIL")
    assert code == 1
