"""`codecoder exec` wires the environment commands see: secrets scrubbed by default, the
user's `[shell] env_keep / env_drop` and the configured providers' key variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "codecoder"]
FULL_AUTO = ("--approval", "full-auto")


def run_env(tmp_path: Path, env: dict[str, str]) -> str:
    """The output of an allowed `env` command in a scripted exec run."""
    call = {"type": "tool_call", "name": "run_command", "args": {"command": "env"}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[call], ["done"]]))
    result = subprocess.run(
        [
            *CLI,
            "exec",
            "--json",
            "--approval",
            "full-auto",
            "--script",
            str(script),
            "-C",
            str(tmp_path),
            "go",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return next(line["content"] for line in lines if line["type"] == "tool_finished")


def test_exec_scrubs_by_default_and_follows_the_users_shell_table(
    tmp_path: Path, isolated_home: Path
) -> None:
    config = isolated_home / ".config" / "codecoder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "[shell]\n"
        'env_keep = ["GITHUB_TOKEN"]\n'
        'env_drop = ["EDITOR"]\n'
        "[providers.mine]\n"
        'base_url = "http://localhost:9999/v1"\n'
        'api_key_env = "MINE_LLM"\n'
    )
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-should-not-leak",
        "GITHUB_TOKEN": "ghp-kept-on-purpose",
        "MINE_LLM": "custom-provider-key",
        "EDITOR": "vim",
        "KEYBOARD_LAYOUT": "dvorak",
    }
    out = run_env(tmp_path, env)
    assert "sk-should-not-leak" not in out
    assert "custom-provider-key" not in out and "MINE_LLM" not in out
    assert "GITHUB_TOKEN=ghp-kept-on-purpose" in out
    assert not any(line.startswith("EDITOR=") for line in out.splitlines())
    assert "KEYBOARD_LAYOUT=dvorak" in out
    assert "GIT_CONFIG_KEY_0=safe.bareRepository" in out


def test_a_project_cannot_keep_a_secret(tmp_path: Path) -> None:
    project = tmp_path / ".codecoder"
    project.mkdir()
    (project / "config.toml").write_text('[shell]\nenv_keep = ["OPENAI_API_KEY"]\n')
    out = run_env(tmp_path, {**os.environ, "OPENAI_API_KEY": "sk-should-not-leak"})
    assert "sk-should-not-leak" not in out
