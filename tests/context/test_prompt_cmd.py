"""`codecoder prompt [-C DIR]`: the assembled prompt on stdout, warnings on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder.cli.main import main
from codecoder.context.prompt import PromptBuilder


def test_prompt_prints_what_a_turn_there_would_get(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prompt", "-C", str(repo / "pkg")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(PromptBuilder(repo / "pkg").system_prompt() + "\n\n# This session\n")
    assert "Code in pkg/ uses tabs." in out
    assert err == (
        "warning: .codecoder/skills/broken/SKILL.md:3: could not find expected ':' "
        "in 'this line is wrong'\n"
    )


def test_prompt_defaults_to_the_current_folder(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "pkg" / "legacy")
    assert main(["prompt"]) == 0
    assert "Legacy code: change nothing without tests." in capsys.readouterr().out


def test_a_missing_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prompt", "-C", str(tmp_path / "nope")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"codecoder prompt: not a folder: {tmp_path / 'nope'}\n"


def test_prompt_as_a_real_process(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codecoder", "prompt", "-C", str(repo)],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ.copy(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("You are CodeCoder")
    assert "- release: Cut a release: tag, changelog." in done.stdout
    assert done.stderr.startswith("warning: .codecoder/skills/broken/SKILL.md:3:")


def test_a_prompt_without_skills_or_profiles_does_not_load_yaml(tmp_path: Path) -> None:
    """PyYAML (~8 ms and more) is imported only once a file with front matter is read."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codecoder", "prompt", "-C", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ.copy(),
        check=True,
    )
    loaded = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert "yaml" not in loaded and "codecoder.context.skills" in loaded
