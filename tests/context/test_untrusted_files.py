"""A cloned repository is untrusted input: its prompt files may be symlinks to secrets,
FIFOs, devices or huge lines, and none of that may reach the prompt or stall building it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.context import fragments
from codecoder.context.files import NotAllowed, read_capped
from codecoder.context.profiles import load_profiles
from codecoder.context.prompt import PromptBuilder
from codecoder.context.skills import discover_skills
from tests.context.helpers import skill_md, write

SECRET = "sk-very-secret-123"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository (a bare `.git` folder with HEAD) beside a secret file outside it."""
    write(tmp_path / "secret.txt", f"---\nname: leak\ndescription: {SECRET}\n---\n{SECRET}\n")
    root = tmp_path / "repo"
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    return root


def outside_warning(shown_as: str, root: Path) -> str:
    reason = f"it leads outside {root} (symlinks are followed only inside it)"
    return f"{shown_as}: cannot be read: {reason}"


def run_bounded(work: Callable[[], object], unblock: Path) -> object:
    """`work()` in a thread; if it is still running after 5 s it is stuck on the FIFO
    `unblock`, which is then opened for writing so the read ends and the thread joins."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    thread.join(5)
    stuck = thread.is_alive()
    if stuck:
        os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
    assert not stuck, f"reading stalled on the FIFO {unblock}"
    return result[0]


# --- symlinks -------------------------------------------------------------------------


def test_instruction_files_linking_out_of_the_repository_are_left_out(project: Path) -> None:
    secret = project.parent / "secret.txt"
    (project / "AGENTS.md").symlink_to(secret)
    write(project / "pkg" / "CLAUDE.md", "placeholder")
    (project / "pkg" / "CLAUDE.md").unlink()
    (project / "pkg" / "CLAUDE.md").symlink_to(secret)
    (project / "pkg" / "CONTEXT.md").symlink_to("../../secret.txt")
    builder = PromptBuilder(project / "pkg")
    prompt = builder.system_prompt()
    assert SECRET not in prompt
    assert "<file" not in prompt
    assert builder.warnings == (
        outside_warning("AGENTS.md", project),
        outside_warning("pkg/CLAUDE.md", project),
        outside_warning("pkg/CONTEXT.md", project),
    )


def test_symlinks_inside_the_repository_are_followed(project: Path) -> None:
    write(project / "docs" / "agents.md", "Shared rules.\n")
    (project / "AGENTS.md").symlink_to("docs/agents.md")
    (project / "linked").symlink_to(project / "docs")
    (project / "CONTEXT.md").symlink_to(project / "linked" / "agents.md")
    builder = PromptBuilder(project)
    prompt = builder.system_prompt()
    assert '<file path="AGENTS.md">\nShared rules.\n</file>' in prompt
    assert '<file path="CONTEXT.md">\nShared rules.\n</file>' in prompt
    assert builder.warnings == ()


def test_a_repository_reached_through_a_symlink_still_reads_its_files(project: Path) -> None:
    write(project / "AGENTS.md", "Rules.\n")
    alias = project.parent / "alias"
    alias.symlink_to(project)
    prompt = PromptBuilder(alias).system_prompt()
    assert '<file path="AGENTS.md">\nRules.\n</file>' in prompt


def test_a_dangling_link_is_simply_absent(project: Path) -> None:
    (project / "AGENTS.md").symlink_to(project.parent / "nowhere.md")
    builder = PromptBuilder(project)
    assert "<file" not in builder.system_prompt()
    assert builder.warnings == ()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_agents_md_linked_to_the_process_environment_is_left_out(project: Path) -> None:
    (project / "AGENTS.md").symlink_to("/proc/self/environ")
    builder = PromptBuilder(project)
    prompt = builder.system_prompt()
    assert f"PATH={os.environ['PATH']}" not in prompt
    assert "<file" not in prompt
    assert builder.warnings[0].startswith("AGENTS.md: cannot be read: it leads outside ")


def test_outside_a_repository_links_must_stay_in_the_workspace(tmp_path: Path) -> None:
    write(tmp_path / "secret.txt", SECRET)
    workspace = tmp_path / "work"
    write(workspace / "notes.md", "Workspace notes.\n")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    (workspace / "CONTEXT.md").symlink_to("notes.md")
    builder = PromptBuilder(workspace)
    prompt = builder.system_prompt()
    if "Git repository: no" not in prompt:
        pytest.skip("the temp dir is inside a git repository")
    assert SECRET not in prompt
    assert '<file path="CONTEXT.md">\nWorkspace notes.\n</file>' in prompt
    assert builder.warnings == (outside_warning("AGENTS.md", workspace),)


def test_user_files_must_stay_in_the_config_dir(project: Path) -> None:
    user = paths.config_dir()
    user.mkdir(parents=True)
    (user / "AGENTS.md").symlink_to(project.parent / "secret.txt")
    write(user / "skills" / "own" / "SKILL.md", skill_md("own", "Own skill.", "body"))
    (user / "skills" / "linked").symlink_to(user / "skills" / "own")
    builder = PromptBuilder(project)
    prompt = builder.system_prompt()
    assert SECRET not in prompt
    assert "- own: Own skill." in prompt
    assert builder.warnings == (outside_warning(str(user / "AGENTS.md"), user),)


def test_skills_and_profiles_linking_out_are_left_out(project: Path) -> None:
    secret = project.parent / "secret.txt"
    skills = project / ".codecoder" / "skills"
    write(skills / "file" / "README", "a skill whose SKILL.md is a link\n")
    (skills / "file" / "SKILL.md").symlink_to(secret)
    write(project.parent / "elsewhere" / "SKILL.md", secret.read_text())
    (skills / "folder").symlink_to(project.parent / "elsewhere")
    agents = project / ".codecoder" / "agents"
    agents.mkdir(parents=True)
    (agents / "leak.md").symlink_to(secret)
    catalogue = discover_skills([project])
    assert catalogue.skills == ()
    assert catalogue.warnings == (
        outside_warning(".codecoder/skills/file/SKILL.md", project),
        outside_warning(".codecoder/skills/folder/SKILL.md", project),
    )
    warnings: list[str] = []
    assert load_profiles(project, warnings=warnings) == []
    assert warnings == [outside_warning(".codecoder/agents/leak.md", project)]
    prompt = PromptBuilder(project).system_prompt()
    assert SECRET not in prompt


def test_a_skill_relinked_after_discovery_is_not_loaded(project: Path) -> None:
    skill_file = project / ".codecoder" / "skills" / "later" / "SKILL.md"
    write(skill_file, skill_md("later", "Fine at first.", "body"))
    skill = discover_skills([project]).get("later")
    assert skill is not None
    skill_file.unlink()
    skill_file.symlink_to(project.parent / "secret.txt")
    with pytest.raises(NotAllowed, match="leads outside"):
        skill.body()


# --- FIFOs, devices and sizes that lie -----------------------------------------------


def test_a_fifo_as_agents_md_is_left_out_without_waiting(project: Path) -> None:
    os.mkfifo(project / "AGENTS.md")
    builder = PromptBuilder(project)
    prompt = run_bounded(builder.system_prompt, project / "AGENTS.md")
    assert "<file" not in str(prompt)
    assert builder.warnings == ("AGENTS.md: cannot be read: not a regular file",)


def test_a_fifo_as_head_is_reported_without_waiting(project: Path) -> None:
    head = project / ".git" / "HEAD"
    head.unlink()
    os.mkfifo(head)
    summary = run_bounded(lambda: fragments.git_summary(project), head)
    assert str(summary).startswith(f"yes, root {project}, HEAD unreadable, ")


def test_a_git_file_that_is_too_large_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "HEAD", "ref: refs/heads/topic\n")
    write(tmp_path / "wt" / ".git", f"gitdir: {tmp_path / 'elsewhere'}\n" + "x" * 100_000)
    assert ", HEAD unreadable, " in fragments.git_summary(tmp_path / "wt")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_head_linked_to_an_endless_device_is_refused(project: Path) -> None:
    """In a child process with its memory capped, so a regression fails instead of
    eating the machine's memory."""
    head = project / ".git" / "HEAD"
    head.unlink()
    head.symlink_to("/dev/zero")
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from pathlib import Path\n"
        "from codecoder.context.fragments import git_summary\n"
        "print(git_summary(Path(sys.argv[1])))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(project)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"yes, root {project}, HEAD unreadable, ")


@pytest.mark.parametrize(
    ("head", "shown"),
    [
        ("ref: refs/heads/feature/x\n", "branch feature/x"),
        ("ref: refs/remotes/origin/main", "branch refs/remotes/origin/main"),
        ("0123456789abcdef0123456789abcdef01234567\n", "detached HEAD at 0123456789ab"),
        ("a" * 64 + "\n", "detached HEAD at aaaaaaaaaaaa"),
        ("SECRET_TOKEN=sk-1\x00HOME=/root\x00", "HEAD unreadable"),
        ("ref: refs/heads/" + "b" * 300 + "\n", "HEAD unreadable"),
        ("ref: refs/heads/a b\n", "HEAD unreadable"),
    ],
)
def test_head_is_shown_only_when_it_is_a_ref_or_an_object_id(
    project: Path, head: str, shown: str
) -> None:
    write(project / ".git" / "HEAD", head)
    assert fragments.git_summary(project).startswith(f"yes, root {project}, {shown}, ")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_the_family_budget_counts_bytes_read_not_stat_sizes() -> None:
    """/proc files say size 0 and hold kilobytes: six of them must share the total."""
    proc = Path("/proc")
    assert Path("/proc/self/maps").stat().st_size == 0
    sources = [fragments.Source(proc / "self" / "maps", f"maps{i}", proc) for i in range(6)]
    blocks = fragments.read_family(sources, 3000, [])
    shown = "".join(re.sub(r"(?s)^<file [^\n]*\n|\n</file>$", "", block) for block in blocks)
    shown = re.sub(r"\n?\[… cut: \d+ bytes of maps\d not shown\]", "", shown)
    assert 1000 < len(shown.encode()) <= 3000


def test_a_file_is_charged_what_its_read_used(tmp_path: Path) -> None:
    path = write(tmp_path / "f.md", "line\n" * 100)
    whole = read_capped(path, 1000, tmp_path)
    cut = read_capped(path, 102, tmp_path)
    assert (whole.used, whole.omitted) == (500, 0)
    assert (cut.used, cut.omitted, cut.text) == (102, 400, "line\n" * 20)


# --- the skills index ----------------------------------------------------------------


def test_broken_skills_do_not_blow_the_skills_index_cap(project: Path) -> None:
    """20 SKILL.md files with a 30 000-character bad line gave a 600 KB section."""
    skills = project / ".codecoder" / "skills"
    for index in range(20):
        write(skills / f"s{index:02d}" / "SKILL.md", "---\n" + "x" * 30_000 + "\n---\nbody\n")
    builder = PromptBuilder(project)
    section = builder.system_prompt().split("# Skills\n", 1)[1]
    assert len(section.encode()) < fragments.SKILLS_INDEX_CAP
    assert len(builder.warnings) == 20
    assert all(len(warning) < 200 for warning in builder.warnings)


def test_many_broken_skills_are_cut_with_a_note(project: Path) -> None:
    skills = project / ".codecoder" / "skills"
    write(skills / "good" / "SKILL.md", skill_md("good", "A usable skill.", "body"))
    for index in range(300):
        write(skills / f"bad{index:03d}" / "SKILL.md", "---\nname: x\n" + "y" * 100 + "\n---\n")
    section = PromptBuilder(project).system_prompt().split("# Skills\n", 1)[1]
    entries = re.findall(r"(?m)^- .*$", section)
    assert entries[0] == "- good: A usable skill."
    assert sum(len(line.encode()) + 1 for line in entries) <= fragments.SKILLS_INDEX_CAP
    note = re.search(r"\[… cut: (\d+) more left-out skills not named\]$", section)
    assert note is not None
    assert int(note.group(1)) == 300 - (len(entries) - 1)
