"""A temp repository with nested AGENTS.md / CLAUDE.md / CONTEXT.md files and skills at
user and project level, built with real git so the environment section is real too."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codecoder import paths
from tests.context.helpers import git, skill_md, write


@pytest.fixture
def git_available() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")


@pytest.fixture
def repo(tmp_path: Path, git_available: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Root AGENTS.md + CONTEXT.md, pkg/AGENTS.md + CONTEXT.md, pkg/legacy/CLAUDE.md only;
    project skills at the root and in pkg/, user skills and a user AGENTS.md; one broken
    skill. Committed, on branch main."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "repo"
    write(root / "AGENTS.md", "# Root rules\nRun `make test` before you finish.\n")
    write(root / "CONTEXT.md", "A calculator library.\n")
    write(root / "pkg" / "AGENTS.md", "Code in pkg/ uses tabs.\n")
    write(root / "pkg" / "CONTEXT.md", "pkg holds the parser.\n")
    write(root / "pkg" / "legacy" / "CLAUDE.md", "Legacy code: change nothing without tests.\n")
    write(root / "pkg" / "legacy" / "AGENTS.txt", "not an instruction file\n")
    skills = root / ".codecoder" / "skills"
    release = skill_md("release", '"Cut a release: tag, changelog."', "Steps.")  # YAML: quoted
    write(skills / "release" / "SKILL.md", release)
    write(skills / "pdf" / "SKILL.md", skill_md("pdf", "Project PDF handling.", "Project body."))
    write(skills / "broken" / "SKILL.md", "---\nname: broken\nthis line is wrong\n---\nbody\n")
    write(
        root / "pkg" / ".codecoder" / "skills" / "parser" / "SKILL.md",
        skill_md("parser", '"Work on the parser: grammar, errors."', "Parser body."),
    )
    user = paths.config_dir()
    write(user / "AGENTS.md", "Answer in British English.\n")
    write(user / "skills" / "pdf" / "SKILL.md", skill_md("pdf", "User PDF handling.", "User body."))
    write(
        user / "skills" / "notes" / "SKILL.md",
        "---\nname: notes\ndescription: >\n  Keep meeting notes\n  in notes/.\n---\nNotes body.\n",
    )
    git(root, "init", "-q")
    git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root
