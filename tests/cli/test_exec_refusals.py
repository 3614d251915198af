"""What plain `codecoder exec` says about a call it refused (issue 29, item 6): the
command, why (the rule, the mode, that it asks and nobody can answer), and a way to allow
it that takes effect, checked by following it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from codecoder import paths

CLI = [sys.executable, "-m", "codecoder"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def touching(tmp_path: Path, command: str = "touch marker") -> str:
    path = tmp_path / "script.json"
    call = {"type": "tool_call", "name": "run_command", "args": {"command": command}}
    path.write_text(json.dumps([[call], ["done"]]))
    return str(path)


def refusal_lines(stderr: str) -> list[str]:
    """The `✗` line of the refused call and the lines under it."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  ✗ "))
    return [lines[start], *(line for line in lines[start + 1 :] if line.startswith("    "))]


def user_config() -> Path:
    return paths.config_dir() / "config.toml"


def test_a_refusal_says_why_and_how_to_allow_it_with_a_user_rule(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    script = touching(tmp_path, "ls && touch marker")
    result = run("exec", "--script", script, "-C", str(workspace), "go")
    assert result.returncode == 0, result.stderr
    assert refusal_lines(result.stderr) == [
        "  ✗ run_command refused: ls && touch marker",
        "    why: run `touch marker`: no rule allows it",
        "    it asks, and nobody can answer in exec (approval mode never-ask)",
        "    to allow it: run with --approval full-auto (it allows this)",
        f'    or add "run_command(touch marker)" to [permissions] allow in {user_config()}',
        f"    (a rule in {workspace}/.codecoder/config.toml would not count: this folder is "
        "not trusted; `codecoder trust` trusts it and approves its allow rules)",
    ]
    user_config().parent.mkdir(parents=True, exist_ok=True)
    user_config().write_text('[permissions]\nallow = ["run_command(touch marker)"]\n')
    result = run("exec", "--script", script, "-C", str(workspace), "go")
    assert result.returncode == 0, result.stderr
    assert "✗" not in result.stderr and (workspace / "marker").exists()


def test_a_project_rule_counts_once_the_folder_is_trusted_and_the_rule_approved(
    tmp_path: Path,
) -> None:
    script = touching(tmp_path)
    workspace = tmp_path / "w"
    (workspace / ".codecoder").mkdir(parents=True)
    project = workspace / ".codecoder" / "config.toml"
    assert run("trust", str(workspace)).returncode == 0
    result = run("exec", "--script", script, "-C", str(workspace), "go")
    assert refusal_lines(result.stderr)[-1] == (
        f"    (a rule in {project} counts only once approved: run `codecoder trust` "
        "after adding it)"
    )
    project.write_text('[permissions]\nallow = ["run_command(touch marker)"]\n')
    result = run("exec", "--script", script, "-C", str(workspace), "go")
    assert refusal_lines(result.stderr)[-1] == (
        f"    (a rule in {project} counts only once approved: run `codecoder trust` "
        "after adding it; its allow rules are not approved now)"
    )
    assert not (workspace / "marker").exists()
    assert run("trust", str(workspace)).returncode == 0
    result = run("exec", "--script", script, "-C", str(workspace), "go")
    assert "✗" not in result.stderr and (workspace / "marker").exists()


def test_a_deny_rule_is_named_with_its_file(tmp_path: Path) -> None:
    user_config().parent.mkdir(parents=True, exist_ok=True)
    user_config().write_text('[permissions]\ndeny = ["run_command(touch:*)"]\n')
    result = run("exec", "--script", touching(tmp_path), "-C", str(tmp_path), "go")
    assert refusal_lines(result.stderr) == [
        "  ✗ run_command refused: touch marker",
        f"    why: denied by rule run_command(touch:*) ({user_config()})",
        "    to allow it: remove or narrow that deny rule (a deny rule wins)",
    ]


def test_read_only_and_ask_modes_say_so(tmp_path: Path) -> None:
    script = touching(tmp_path)
    result = run("exec", "--approval", "read-only", "--script", script, "-C", str(tmp_path), "go")
    assert refusal_lines(result.stderr) == [
        "  ✗ run_command refused: touch marker",
        "    why: run `touch marker` may change something, and read-only mode lets nothing change",
        "    to allow it: run with another --approval mode",
    ]
    result = run("exec", "--approval", "ask", "--script", script, "-C", str(tmp_path), "go")
    assert refusal_lines(result.stderr)[1:3] == [
        "    why: run `touch marker`: no rule allows it",
        "    it asks, and nobody can answer in exec (approval mode ask)",
    ]
    assert not (tmp_path / "marker").exists()


def test_a_file_tool_that_refused_says_why(tmp_path: Path) -> None:
    """A call that ran and failed (write_file over a file the session has not read) is
    not a denial, but its `✗` line says why too (before: a bare `✗ write_file`)."""
    (tmp_path / "notes.md").write_text("keep me\n")
    call = {"type": "tool_call", "name": "write_file",
            "args": {"path": "notes.md", "content": "x"}}  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[call], ["done"]]))
    result = run(
        "exec", "--approval", "auto-edit", "--script", str(script), "-C", str(tmp_path), "go"
    )
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stderr.splitlines() if x.startswith("  ✗ "))
    assert line.startswith("  ✗ write_file: notes.md exists (8 bytes) and this session has not")
