""" "Always" answers: session grants, project rules in `.codecoder/config.local.toml`, trust."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.config import ConfigError
from codecoder.permissions import RulePolicy, is_trusted, trust
from codecoder.permissions.trust import trusted_file

from .helpers import call, run, write_user_rules


def local_file(workspace: Path) -> Path:
    return paths.project_dir(workspace) / "config.local.toml"


# --- session -----------------------------------------------------------------------


def test_a_session_grant_covers_exactly_that_command(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path)
    tool, request = run("make test > build.log")
    assert policy.decide(tool, request).verdict == "ask"
    policy.remember(tool, request, "session")
    assert policy.decide(*run("make test > build.log")).verdict == "allow"
    assert policy.decide(*run("make test > other.log")).verdict == "ask"
    assert policy.decide(*run("make test")).verdict == "ask"
    assert not local_file(tmp_path).exists()


def test_a_session_grant_covers_a_command_the_parser_cannot_check(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path)
    tool, request = run("$EDITOR notes.txt")
    assert policy.decide(tool, request).verdict == "ask"
    policy.remember(tool, request, "session")
    assert policy.decide(*run("$EDITOR notes.txt")).verdict == "allow"


def test_a_deny_rule_beats_a_session_grant(tmp_path: Path) -> None:
    write_user_rules({"deny": ["run_command(rm:*)"]})
    policy = RulePolicy.load(tmp_path)
    tool, request = run("ls; rm -rf x")
    policy.remember(tool, request, "session")
    assert policy.decide(tool, request).verdict == "deny"


def test_a_session_grant_for_a_file_covers_that_real_path(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    policy = RulePolicy(tmp_path)
    tool, request = call("write_file", path="docs/a.md", content="x")
    policy.remember(tool, request, "session")
    assert policy.decide(*call("write_file", path="./docs/../docs/a.md", content="y")).verdict == (
        "allow"
    )
    assert policy.decide(*call("write_file", path="docs/b.md", content="y")).verdict == "ask"
    assert policy.decide(
        *call("edit_file", path="docs/a.md", old_text="", new_text="")
    ).verdict == ("ask")


def test_a_session_grant_for_a_protected_path_holds_only_for_that_path(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path, "full-auto")
    tool, request = call("write_file", path=".git/hooks/pre-commit", content="x")
    assert policy.decide(tool, request).verdict == "ask"
    policy.remember(tool, request, "session")
    assert policy.decide(tool, request).verdict == "allow"
    assert policy.decide(*call("write_file", path=".git/config", content="x")).verdict == "ask"


def test_a_session_grant_for_a_fetch_covers_that_host(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path)
    tool, request = call("web_fetch", url="https://docs.python.org/3/library/")
    policy.remember(tool, request, "session")
    assert policy.decide(*call("web_fetch", url="https://docs.python.org/3/x")).verdict == "allow"
    assert policy.decide(*call("web_fetch", url="https://pypi.org/")).verdict == "ask"


# --- project -----------------------------------------------------------------------


def test_remember_project_creates_the_local_file_and_a_trusted_reload_applies_it(
    tmp_path: Path,
) -> None:
    trust(tmp_path)
    policy = RulePolicy.load(tmp_path)
    tool, request = run("git commit -m x && npm run build > out.log")
    policy.remember(tool, request, "project")
    written = tomllib.loads(local_file(tmp_path).read_text())
    assert sorted(written["permissions"]["allow"]) == [
        "run_command(git commit -m x)",
        "run_command(npm run build)",
        "write_file(out.log)",
    ]
    assert policy.decide(*run("npm run build > out.log; git commit -m x")).verdict == "allow"
    fresh = RulePolicy.load(tmp_path)
    assert fresh.decide(*run("npm run build > out.log; git status")).verdict == "allow"
    assert fresh.decide(*run("npm run build > other.log")).verdict == "ask"


def test_remember_project_keeps_existing_content(tmp_path: Path) -> None:
    trust(tmp_path)
    target = local_file(tmp_path)
    target.parent.mkdir()
    original = (
        "# my notes: keep me\n"
        "model = 'openai/gpt-5'\n\n"
        "[permissions]\n"
        "# allowed by hand\n"
        'allow = [\n    "run_command(ls)",\n]\n'
        'deny = ["run_command(rm:*)"]\n\n'
        "[compaction]\nthreshold = 0.8\n"
    )
    target.write_text(original)
    policy = RulePolicy.load(tmp_path)
    policy.remember(*run("make"), "project")
    text = target.read_text()
    assert "# my notes: keep me" in text
    assert "# allowed by hand" in text
    data = tomllib.loads(text)
    assert data["model"] == "openai/gpt-5"
    assert data["compaction"] == {"threshold": 0.8}
    assert data["permissions"]["allow"] == ["run_command(make)", "run_command(ls)"]
    assert data["permissions"]["deny"] == ["run_command(rm:*)"]
    assert [p.name for p in target.parent.iterdir()] == ["config.local.toml"]  # no temp left


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("[permissions]\ndeny = []", {"allow": ["run_command(make)"], "deny": []}),
        ("[permissions]\nallow = []\n", {"allow": ["run_command(make)"]}),
        ("model = 'x'\n[compaction]\nthreshold = 0.5", {"allow": ["run_command(make)"]}),
        ("", {"allow": ["run_command(make)"]}),
    ],
)
def test_remember_project_adds_the_table_or_the_key(
    tmp_path: Path, before: str, after: dict[str, list[str]]
) -> None:
    target = local_file(tmp_path)
    target.parent.mkdir()
    target.write_text(before)
    RulePolicy(tmp_path).remember(*run("make"), "project")
    assert tomllib.loads(target.read_text())["permissions"] == after


def test_remember_project_twice_writes_the_rule_once(tmp_path: Path) -> None:
    trust(tmp_path)
    policy = RulePolicy.load(tmp_path)
    tool, request = call("write_file", path="notes/a.md", content="x")
    policy.remember(tool, request, "project")
    RulePolicy.load(tmp_path).remember(tool, request, "project")
    assert tomllib.loads(local_file(tmp_path).read_text())["permissions"]["allow"] == [
        "write_file(notes/a.md)"
    ]


def test_remember_project_in_an_untrusted_folder_holds_now_and_later_once_trusted(
    tmp_path: Path,
) -> None:
    policy = RulePolicy.load(tmp_path)
    tool, request = run("cargo test")
    policy.remember(tool, request, "project")
    assert policy.decide(*run("cargo test")).verdict == "allow"
    assert RulePolicy.load(tmp_path).decide(*run("cargo test")).verdict == "ask"
    trust(tmp_path)
    assert RulePolicy.load(tmp_path).decide(*run("cargo test")).verdict == "allow"


def test_remember_project_never_writes_a_rule_for_a_protected_path(tmp_path: Path) -> None:
    trust(tmp_path)
    policy = RulePolicy.load(tmp_path, "full-auto")
    tool, request = call("write_file", path=".codecoder/config.toml", content="x")
    policy.remember(tool, request, "project")
    assert not local_file(tmp_path).exists()
    assert policy.decide(tool, request).verdict == "allow"  # this session: the user said so


def test_remember_project_for_an_outside_path_writes_an_absolute_rule(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    trust(workspace)
    policy = RulePolicy.load(workspace)
    policy.remember(*call("read_file", path=str(tmp_path / "shared" / "x.md")), "project")
    allow = tomllib.loads(local_file(workspace).read_text())["permissions"]["allow"]
    assert allow == [f"read_file({tmp_path.resolve()}/shared/x.md)"]


def test_a_file_that_cannot_be_spliced_safely_is_left_alone(tmp_path: Path) -> None:
    target = local_file(tmp_path)
    target.parent.mkdir()
    original = 'permissions = { allow = ["run_command(ls)"] }\n'
    target.write_text(original)
    with pytest.raises(ConfigError, match="add it by hand"):
        RulePolicy(tmp_path).remember(*run("make"), "project")
    assert target.read_text() == original


def test_a_bad_rule_in_a_config_file_names_that_file(tmp_path: Path) -> None:
    user_file = write_user_rules({"allow": ["run_command(echo 'open)"]})
    with pytest.raises(ConfigError, match=str(user_file)):
        RulePolicy.load(tmp_path)


# --- trust -------------------------------------------------------------------------


def test_trust_is_recorded_by_real_path(tmp_path: Path) -> None:
    real = tmp_path / "project"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    assert not is_trusted(real)
    trust(alias)
    assert is_trusted(real)
    assert is_trusted(alias)
    assert not is_trusted(real / "sub")
    assert tomllib.loads(trusted_file().read_text())["folders"] == [str(real.resolve())]


def test_trust_is_idempotent_and_keeps_other_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / 'b "quoted"'
    first.mkdir()
    second.mkdir()
    trust(first)
    trust(second)
    trust(first)
    folders = tomllib.loads(trusted_file().read_text())["folders"]
    assert folders == [str(first.resolve()), str(second.resolve())]


def test_a_broken_trust_file_is_a_config_error(tmp_path: Path) -> None:
    trusted_file().parent.mkdir(parents=True, exist_ok=True)
    trusted_file().write_text("folders = 'not a list'\n")
    with pytest.raises(ConfigError, match=r"trusted\.toml"):
        is_trusted(tmp_path)


# --- .gitignore ----------------------------------------------------------------------


def test_the_first_project_rule_creates_a_gitignore(tmp_path: Path) -> None:
    RulePolicy(tmp_path).remember(*run("make"), "project")
    assert (tmp_path / ".gitignore").read_text().splitlines()[-1] == ".codecoder/config.local.toml"
    (tmp_path / ".gitignore").unlink()
    RulePolicy(tmp_path).remember(*run("make test"), "project")  # the file exists now
    assert not (tmp_path / ".gitignore").exists()


def test_an_untracked_gitignore_gets_the_line(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/")  # no newline at the end
    RulePolicy(tmp_path).remember(*run("make"), "project")
    assert (tmp_path / ".gitignore").read_text() == "build/\n.codecoder/config.local.toml\n"


def test_a_tracked_gitignore_is_left_alone_unless_the_user_said_yes(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    workspace = tmp_path / "sub"
    (workspace / ".gitignore").write_text("build/\n")
    RulePolicy(workspace).remember(*run("make"), "project")  # nobody asked (headless)
    assert (workspace / ".gitignore").read_text() == "build/\n"
    assert (workspace / ".codecoder" / ".gitignore").read_text().splitlines()[-1] == (
        "config.local.toml"
    )
    local_file(workspace).unlink()
    (workspace / ".codecoder" / ".gitignore").unlink()
    policy = RulePolicy(workspace)
    policy.edit_tracked_gitignore = True
    policy.remember(*run("make"), "project")
    assert (workspace / ".gitignore").read_text() == "build/\n.codecoder/config.local.toml\n"
    assert not (workspace / ".codecoder" / ".gitignore").exists()


@pytest.mark.parametrize(
    ("where", "lines"),
    [
        (".gitignore", ".codecoder/"),
        (".gitignore", "/.codecoder/config.local.toml"),
        (".gitignore", "*.local.toml"),
        (".gitignore", ".codecoder"),
        ("../.gitignore", "ws/.codecoder/"),
        ("../.gitignore", "config.local.toml"),
        (".codecoder/.gitignore", "*"),
    ],
)
def test_a_file_already_ignored_changes_nothing(tmp_path: Path, where: str, lines: str) -> None:
    from codecoder.permissions.tomlfile import ignore_plan

    (tmp_path / ".git").mkdir()
    workspace = tmp_path / "ws"
    (workspace / ".codecoder").mkdir(parents=True)
    (workspace / where).write_text(f"# mine\n{lines}\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob(".gitignore")}
    assert ignore_plan(workspace) == "ignored"
    RulePolicy(workspace).remember(*run("make"), "project")
    assert {p: p.read_bytes() for p in tmp_path.rglob(".gitignore")} == before


def test_a_negated_pattern_is_not_ignored(tmp_path: Path) -> None:
    from codecoder.permissions.tomlfile import ignore_plan

    (tmp_path / ".gitignore").write_text(".codecoder/*\n!.codecoder/config.local.toml\n")
    assert ignore_plan(tmp_path) == "append"
    (tmp_path / ".gitignore").write_text("/other/.codecoder/\n")
    assert ignore_plan(tmp_path) == "append"


def test_forbid_denies_the_same_call_for_the_rest_of_the_session(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path, "ask")
    policy.forbid(*run("npm publish"))
    decision = policy.decide(*run("npm publish"))
    assert decision.verdict == "deny" and "session" in decision.reason
    assert policy.decide(*run("npm publish --dry-run")).verdict == "ask"
    policy.forbid(*call("write_file", path="a.txt", content="x"))
    assert policy.decide(*call("write_file", path="./a.txt", content="y")).verdict == "deny"
    assert RulePolicy(tmp_path, "ask").decide(*run("npm publish")).verdict == "ask"
