"""`codecoder trust` / `untrust`, and what the interactive client says and asks when an
answer writes a project rule (issue 10, item 13; the client in a real terminal)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from codecoder.cli.tui.questions import UNTRUSTED
from codecoder.permissions import is_trusted
from codecoder.permissions.trust import trusted_file
from tests.terminal import Terminal

CLI = [sys.executable, "-m", "codecoder"]


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, input=input, timeout=60, check=False
    )


def script(tmp_path: Path, replies: list[Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    return str(path)


def touch(name: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "run_command", "args": {"command": f"touch {name}"}}


def test_trust_and_untrust(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".codecoder").mkdir(parents=True)
    (project / ".codecoder" / "config.local.toml").write_text(
        '[permissions]\nallow = ["run_command(make)", "run_command(ls)"]\ndeny = ["web_fetch"]\n'
    )
    result = run("trust", str(project))
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"trusted: {project}\n  applies .codecoder/config.local.toml (rules: 2 allow, 1 deny)\n"
        "  allow rules approved as they are now (a change needs `codecoder trust` again):\n"
        "    run_command(make)\n    run_command(ls)\n"
    )
    assert is_trusted(project)
    assert tomllib.loads(trusted_file().read_text()) == {"folders": [str(project)]}
    assert run("trust", str(project)).stdout.startswith(f"already trusted: {project}\n")
    result = run("untrust", str(project))
    assert (result.returncode, result.stdout) == (0, f"no longer trusted: {project}\n")
    assert not is_trusted(project)
    assert run("untrust", str(project)).stdout == f"was not trusted: {project}\n"


def test_trust_warns_about_a_broken_project_file(tmp_path: Path) -> None:
    (tmp_path / ".codecoder").mkdir()
    (tmp_path / ".codecoder" / "config.toml").write_text("[permisions]\n")
    result = run("trust", str(tmp_path))
    assert result.returncode == 0
    assert "warning:" in result.stderr and "did you mean [permissions]?" in result.stderr
    assert is_trusted(tmp_path)


def interactive(tmp_path: Path, replies: list[Any], keys: list[str]) -> str:
    """A session in a terminal: the task `go`, then `keys` at its question; what the
    screen showed before each key, and at the end."""
    path = script(tmp_path, replies)
    term = Terminal(["--no-daemon", "--script", path, "-C", str(tmp_path)], cwd=tmp_path)
    try:
        term.ready()
        term.line("go")
        term.wait_for("Allow it?")
        seen = []
        for key in keys:
            term.settle(0.5)  # a question takes keys once the typing has stopped
            seen.append(term.display())
            term.send(key)
        term.wait_for("ok")
        term.send("\x04")
        assert term.exit_code() == 0
        return "\n".join([*seen, term.text()])
    finally:
        term.close()


def test_the_prompt_says_a_project_rule_needs_trust(tmp_path: Path) -> None:
    out = interactive(tmp_path, [[touch("a")], ["ok"]], ["p"])
    assert "always, this project  " + UNTRUSTED in out
    assert (tmp_path / "a").exists()
    assert run("trust", str(tmp_path)).returncode == 0
    out = interactive(tmp_path, [[touch("b")], ["ok"]], ["n"])
    assert "p  always, this project" in out and UNTRUSTED not in out


def test_the_first_project_rule_asks_before_changing_a_tracked_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    gitignore = tmp_path / ".gitignore"
    gitignore.write_text("build/\n")
    out = interactive(tmp_path, [[touch("a")], ["ok"]], ["p", "n"])
    assert "Add it to .gitignore (a file git tracks)?" in out
    assert gitignore.read_text() == "build/\n"
    assert "config.local.toml" in (tmp_path / ".codecoder" / ".gitignore").read_text()
    (tmp_path / ".codecoder" / "config.local.toml").unlink()
    (tmp_path / ".codecoder" / ".gitignore").unlink()
    interactive(tmp_path, [[touch("b")], ["ok"]], ["p", "y"])
    assert gitignore.read_text() == "build/\n.codecoder/config.local.toml\n"
