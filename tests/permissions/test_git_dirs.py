"""A folder that looks like a git directory is as protected as `.git` (paths.py).

The reviewer's attack, under `auto-edit` with `run_command(git status)` allowed: write
`sub/HEAD`, `sub/config` (with a `core.fsmonitor` command), `sub/objects/…` and
`sub/refs/…`, then run `git status` with `cwd: "sub"`, and git runs the planted command.
Whatever the order of the writes, the second mark of a git directory asks; and a command
run inside such a folder asks too.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from codecoder.kernel.events import ToolFinished
from codecoder.permissions import RulePolicy

from .helpers import World, call, drive, run, write_user_rules

PLANTED = {
    "HEAD": "ref: refs/heads/main\n",
    "config": "[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch ../pwned; false\n",
    "objects/info/x": "",
    "refs/heads/x": "",
}


@pytest.mark.parametrize("order", list(itertools.permutations(PLANTED)))
def test_the_second_mark_of_a_git_dir_asks_whatever_the_order(
    tmp_path: Path, order: tuple[str, ...]
) -> None:
    policy = RulePolicy(tmp_path, "auto-edit")
    verdicts = []
    for name in order:
        decision = policy.decide(*call("write_file", path=f"sub/{name}", content=PLANTED[name]))
        verdicts.append(decision.verdict)
        if decision.verdict == "allow":
            target = tmp_path / "sub" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(PLANTED[name])
    assert verdicts[0] == "allow"
    assert verdicts[1:] == ["ask"] * (len(order) - 1), verdicts


def test_shell_redirections_into_a_git_dir_shape_ask(tmp_path: Path) -> None:
    (tmp_path / "sub" / "objects").mkdir(parents=True)
    policy = RulePolicy(tmp_path, "full-auto")
    for line in ("echo 'ref: refs/heads/main' > sub/HEAD", "printf x > sub/config"):
        assert policy.decide(*run(line)).verdict == "ask", line


def test_a_command_in_a_folder_shaped_like_a_git_dir_asks(tmp_path: Path) -> None:
    write_user_rules({"allow": ["run_command(git status)"]})
    for name, text in PLANTED.items():
        target = tmp_path / "sub" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    policy = RulePolicy.load(tmp_path, "auto-edit")
    decision = policy.decide(*run("git status", cwd="sub"))
    assert decision.verdict == "ask" and "git directory" in decision.reason
    entering = policy.decide(*run("cd sub && git status"))
    assert entering.verdict == "ask" and "git directory" in entering.reason
    assert policy.decide(*run("git status")).verdict == "allow"


def test_ordinary_folders_are_not_mistaken_for_git_dirs(tmp_path: Path) -> None:
    for folder in ("src/config", "src/hooks", "docs/objects"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "app.config").write_text("")
    policy = RulePolicy(tmp_path, "auto-edit")
    for path in ("src/config/a.py", "src/hooks/use.ts", "docs/objects/x.md", "HEAD.md", "config"):
        assert policy.decide(*call("write_file", path=path, content="x")).verdict == "allow", path


def test_the_hooks_folder_of_core_hooks_path_is_protected(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.hooksPath", ".husky"], check=True)
    policy = RulePolicy(tmp_path, "full-auto")
    decision = policy.decide(*call("write_file", path=".husky/pre-commit", content="touch x"))
    assert decision.verdict == "ask" and "hooksPath" in decision.reason
    assert policy.decide(*run("echo 'touch x' > .husky/pre-commit")).verdict == "ask"
    assert policy.decide(*call("write_file", path="src/a.py", content="x")).verdict == "allow"


def test_the_planted_repository_never_runs_its_command(world: World) -> None:
    """End to end: auto-edit, `git status` allowed; the agent plants a git dir (each
    question answered "deny") and runs git there: git runs, and nothing planted does."""
    write_user_rules({"allow": ["run_command(git status)"]})
    for name, text in PLANTED.items():
        events = drive(world, "auto-edit", "write_file", {"path": f"sub/{name}", "content": text})
        finished = next(e for e in events if isinstance(e, ToolFinished))
        assert (finished.error is None) == (name == "HEAD"), name
    events = drive(world, "auto-edit", "run_command", {"command": "git status", "cwd": "sub"})
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.status == "success"
    assert not (world.ws / "pwned").exists()


def test_a_planted_repository_made_earlier_is_not_entered(world: World) -> None:
    """The folder was planted with the user's consent earlier (or by a build): running
    git inside it still asks, and denied, the planted command never runs."""
    write_user_rules({"allow": ["run_command(git status)"]})
    for name, text in PLANTED.items():
        target = world.ws / "sub" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    events = drive(world, "auto-edit", "run_command", {"command": "git status", "cwd": "sub"})
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.error is not None and finished.error.kind == "denied"
    assert not (world.ws / "pwned").exists()


def test_husky_hooks_are_protected(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.hooksPath", ".husky/_"], check=True)
    policy = RulePolicy(tmp_path, "full-auto")
    assert (
        policy.decide(*call("write_file", path=".husky/pre-commit", content="x")).verdict == "ask"
    )
    assert policy.decide(*run("cp payload .husky/_/pre-commit")).verdict == "ask"


FSMONITOR = "[core]\n\tfsmonitor = touch pwned; false\n"


def test_config_files_that_git_includes_are_protected(tmp_path: Path) -> None:
    """Written, an included file is git's config: its `core.fsmonitor` runs at the user's
    next `git status`. Each way to include one, a file that does not exist yet, and a
    workspace below the top of its repository (git names the files from the top)."""
    repo = tmp_path / "repo"
    ws = repo / "pkg"
    (ws / "conf").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    def add(key: str, value: str) -> None:
        subprocess.run(["git", "-C", str(repo), "config", "--add", key, value], check=True)

    add("include.path", "../pkg/local.gitconfig")  # relative to .git/, and missing
    add("includeIf.gitdir:/.path", str(ws / "conf" / "when.cfg"))  # absolute, conditional
    add("include.path", str(tmp_path / "outside.cfg"))  # not in the workspace
    (ws / "conf" / "when.cfg").write_text("[include]\n\tpath = nested.cfg\n")  # conf/nested.cfg
    policy = RulePolicy(ws, "full-auto")
    guarded = ("local.gitconfig", "conf/when.cfg", "conf/nested.cfg", "conf/../local.gitconfig")
    for path in guarded:
        decision = policy.decide(*call("write_file", path=path, content=FSMONITOR))
        assert decision.verdict == "ask" and "include.path" in decision.reason, (path, decision)
        assert policy.decide(*run(f"printf '[core]' > {path}")).verdict == "ask", path
        assert policy.decide(*run(f"cat payload >> {path}")).verdict == "ask", path
    for path in ("conf/other.cfg", "local.gitconfig.txt", "src/when.cfg"):
        assert policy.decide(*call("write_file", path=path, content="x")).verdict == "allow", path
    # the folder holding one, moved aside or removed, could be made again with a new file
    for line in ("mv staged conf", "rm -rf conf", "mv conf elsewhere"):
        decision = policy.decide(*run(line))
        assert decision.verdict == "ask" and "holds" in decision.reason, (line, decision)
    assert policy.decide(*call("write_file", path="conf", content="x")).verdict == "ask"
    assert policy.decide(*run("mkdir conf/new && echo x > conf/new/f")).verdict == "allow"


def test_a_link_to_an_included_config_file_asks(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "config", "include.path", "../team.cfg"], check=True
    )
    (tmp_path / "team.cfg").write_text("")
    (tmp_path / "alias.cfg").symlink_to(tmp_path / "team.cfg")
    policy = RulePolicy(tmp_path, "full-auto")
    assert policy.decide(*call("write_file", path="alias.cfg", content=FSMONITOR)).verdict == "ask"
    assert policy.decide(*run("cp payload alias.cfg")).verdict == "ask"


def test_an_include_beside_a_linked_git_folder_is_the_one_git_opens(tmp_path: Path) -> None:
    """`.git` is a link to `meta/repo.git`: git opens `.git/../local.cfg` as
    `meta/local.cfg` (the kernel leaves the link's target for `..`), not `local.cfg`."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "meta").mkdir()
    (tmp_path / ".git").rename(tmp_path / "meta" / "repo.git")
    (tmp_path / ".git").symlink_to("meta/repo.git")
    git = ["git", "-C", str(tmp_path), "config", "include.path", "../local.cfg"]
    subprocess.run(git, check=True)
    policy = RulePolicy(tmp_path, "full-auto")
    decision = policy.decide(*call("write_file", path="meta/local.cfg", content=FSMONITOR))
    assert decision.verdict == "ask" and "include.path" in decision.reason
    assert policy.decide(*run("printf x > meta/local.cfg")).verdict == "ask"
