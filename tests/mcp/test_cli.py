"""`codecoder mcp list | add | approve`, and MCP tools in a scripted `exec` turn, each
as a child process on the test's own XDG folders."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from codecoder.permissions import trust
from tests.mcp.conftest import time_command

pytestmark = pytest.mark.timeout(180)


def codecoder(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codecoder", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def user_config() -> Path:
    return paths.config_dir() / "config.toml"


def test_add_writes_the_user_config_and_keeps_what_was_there() -> None:
    user_config().parent.mkdir(parents=True, exist_ok=True)
    user_config().write_text('# mine\nmodel = "a/b"\n\n[permissions]\nallow = ["read_file"]\n')
    added = codecoder(
        "mcp", "add", "git", "--env", "GIT_PAGER=cat", "--", "uvx", "mcp-server-git", "-v"
    )
    assert added.returncode == 0, added.stderr
    assert "mcp__git__*" in added.stdout
    http = codecoder("mcp", "add", "remote", "--url", "https://h/mcp", "--header", "X-Key=1")
    assert http.returncode == 0, http.stderr
    text = user_config().read_text()
    assert text.startswith('# mine\nmodel = "a/b"\n')
    assert tomllib.loads(text) == {
        "model": "a/b",
        "permissions": {"allow": ["read_file"]},
        "mcp": {
            "servers": {
                "git": {
                    "command": "uvx",
                    "args": ["mcp-server-git", "-v"],
                    "env": {"GIT_PAGER": "cat"},
                },
                "remote": {"url": "https://h/mcp", "headers": {"X-Key": "1"}},
            }
        },
    }


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["git", "--", "x"], "already configured"),
        (["a__b", "--", "x"], "server name"),
        (["nothing"], "give either -- COMMAND ARGS… or --url URL"),
        (["both", "--url", "http://h/mcp", "--", "x"], "give either"),
        (["x", "mcp-server-git", "--repo", "."], "the command goes after --"),
        (["f", "--url", "ftp://h/mcp"], "http:// or https://"),
    ],
)
def test_add_refuses_what_it_cannot_write(args: list[str], fragment: str) -> None:
    assert codecoder("mcp", "add", "git", "--", "first").returncode == 0
    before = user_config().read_text()
    refused = codecoder("mcp", "add", *args)
    assert refused.returncode == 2
    assert fragment in refused.stderr
    assert user_config().read_text() == before


def test_list_starts_the_servers_and_shows_their_tools(tmp_path: Path) -> None:
    assert "no MCP servers configured" in codecoder("mcp", "list", "-C", str(tmp_path)).stdout
    assert codecoder("mcp", "add", "time", "--", time_command()).returncode == 0
    assert codecoder("mcp", "add", "gone", "--", "no-such-server-x").returncode == 0
    listed = codecoder("mcp", "list", "-C", str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"time  ready  stdio  on the host  {time_command()}"
    assert lines[1] == "    tools: mcp__time__get_current_time, mcp__time__convert_time"
    assert lines[2] == "gone  failed  stdio  on the host  no-such-server-x"
    assert lines[3].startswith("    failed to start: cannot run `no-such-server-x`")


def test_a_project_server_is_listed_but_runs_only_once_approved(tmp_path: Path) -> None:
    project = tmp_path / ".codecoder" / "config.toml"
    project.parent.mkdir()
    project.write_text(f"[mcp.servers.clock]\ncommand = {json.dumps(time_command())}\n")
    trust(tmp_path)
    listed = codecoder("mcp", "list", "-C", str(tmp_path)).stdout
    assert "clock (project)  not started" in listed
    assert "not approved yet" in listed and "codecoder mcp approve clock" in listed
    approved = codecoder("mcp", "approve", "clock", "-C", str(tmp_path))
    assert approved.returncode == 0 and f"approved clock in {tmp_path}" in approved.stdout
    assert "clock (project)  ready" in codecoder("mcp", "list", "-C", str(tmp_path)).stdout
    project.write_text(
        f'[mcp.servers.clock]\ncommand = {json.dumps(time_command())}\nargs = ["--x"]\n'
    )
    changed = codecoder("mcp", "list", "-C", str(tmp_path)).stdout
    assert "its definition changed since you approved it" in changed
    assert codecoder("mcp", "approve", "nope", "-C", str(tmp_path)).returncode == 2


def exec_turn(workspace: Path, script: list[Any]) -> list[dict[str, Any]]:
    path = workspace.parent / "script.json"
    path.write_text(json.dumps(script))
    done = codecoder("exec", "--json", "--script", str(path), "-C", str(workspace), "go")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_scripted_turn_calls_a_server_tool(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert codecoder("mcp", "add", "time", "--", time_command()).returncode == 0
    with user_config().open("a") as config:
        config.write('\n[permissions]\nallow = ["mcp__time__*"]\n')
    # once listed, its tools are offered from the first request of a session on
    assert "time  ready" in codecoder("mcp", "list", "-C", str(workspace)).stdout
    call = {"type": "tool_call", "name": "mcp__time__get_current_time", "args": {"timezone": "UTC"}}
    lines = exec_turn(workspace, [[call], ["It is late."]])
    (finished,) = [line for line in lines if line["type"] == "tool_finished"]
    assert finished["status"] == "success", finished
    assert json.loads(finished["content"])["timezone"] == "UTC"
    assert lines[-1]["type"] == "done" and lines[-1]["reason"] == "completed"


def test_without_a_rule_a_headless_run_denies_a_server_tool(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert codecoder("mcp", "add", "time", "--", time_command()).returncode == 0
    assert "time  ready" in codecoder("mcp", "list", "-C", str(workspace)).stdout
    call = {"type": "tool_call", "name": "mcp__time__get_current_time", "args": {"timezone": "UTC"}}
    lines = exec_turn(workspace, [[call], ["ok"]])
    (finished,) = [line for line in lines if line["type"] == "tool_finished"]
    assert finished["status"] == "error"
    assert finished["error"]["kind"] == "denied"
    assert "never-ask" in finished["error"]["message"]


def test_a_scripted_turn_through_server_everything(tmp_path: Path, everything: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert codecoder("mcp", "add", "everything", "--", "node", str(everything)).returncode == 0
    with user_config().open("a") as config:
        config.write('\n[permissions]\nallow = ["mcp__everything__echo"]\n')
    assert "everything  ready" in codecoder("mcp", "list", "-C", str(workspace)).stdout
    echo = {"type": "tool_call", "name": "mcp__everything__echo", "args": {"message": "hi"}}
    env = {"type": "tool_call", "name": "mcp__everything__get-env", "args": {}}
    lines = exec_turn(workspace, [[echo, env], ["done"]])
    finished = [line for line in lines if line["type"] == "tool_finished"]
    assert [(f["name"], f["status"]) for f in finished] == [
        ("mcp__everything__echo", "success"),
        ("mcp__everything__get-env", "error"),  # no rule allows that one
    ]
    assert finished[0]["content"] == "Echo: hi"


def test_a_server_that_fails_during_a_turn_is_one_line_on_stderr(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code = "import sys; sys.stderr.write('GITHUB_TOKEN is not set\\n'); sys.exit(1)"
    assert codecoder("mcp", "add", "gh", "--", sys.executable, "-c", code).returncode == 0
    script = tmp_path / "script.json"
    # servers start at the reply's first event; the reply then goes on long enough for
    # the server's failure to be known before Done
    parts = ["Thinking. ", {"type": "sleep", "seconds": 8}, "ok"]
    script.write_text(json.dumps([{"parts": parts}]))
    done = codecoder("exec", "--script", str(script), "-C", str(workspace), "go")
    assert done.returncode == 0, done.stderr
    line = (
        "codecoder: MCP server gh failed to start: it exited (exit status 1); "
        "stderr: GITHUB_TOKEN is not set"
    )
    assert done.stderr.splitlines().count(line) == 1, done.stderr
    assert done.stdout.strip() == "Thinking. ok"
