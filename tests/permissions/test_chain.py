"""The lookup chain: deny wins, then the first level with a matching rule, then defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from codecoder.permissions import RulePolicy
from codecoder.permissions.modes import ApprovalMode

from .helpers import call, run, trust_folder, write_project_rules, write_user_rules


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / ".git" / "hooks").mkdir(parents=True)
    return ws


def policy(
    workspace: Path,
    user: dict[str, list[str]] | None = None,
    project: dict[str, list[str]] | None = None,
    *,
    trusted: bool = True,
    mode: ApprovalMode = "ask",
) -> RulePolicy:
    if user is not None:
        write_user_rules(user)
    if project is not None:
        write_project_rules(workspace, project)
    if trusted:
        trust_folder(workspace)
    return RulePolicy.load(workspace, mode)


PUSH = "run_command(git push)"
RM = "run_command(rm:*)"
ECHO = "run_command(echo:*)"
STATUS = "run_command(git status)"
NPM = "run_command(npm run test:*)"
EDIT_ALL = "edit(**)"


class Case(NamedTuple):
    command: str
    verdict: str
    user: dict[str, list[str]]
    project: dict[str, list[str]]
    trusted: bool


def case(
    name: str,
    command: str,
    verdict: str,
    user: dict[str, list[str]] | None = None,
    project: dict[str, list[str]] | None = None,
    *,
    trusted: bool = True,
) -> Any:
    return pytest.param(Case(command, verdict, user or {}, project or {}, trusted), id=name)


def allow(*rules: str) -> dict[str, list[str]]:
    return {"allow": list(rules)}


CHAIN_CASES = [
    case("no rule: the default asks", "git push", "ask"),
    case("user allow", "git push", "allow", allow(PUSH)),
    case("project allow, trusted", "git push", "allow", {}, allow(PUSH)),
    case("project allow, untrusted", "git push", "ask", {}, allow(PUSH), trusted=False),
    case(
        "project deny, untrusted", "git push", "allow", allow(PUSH), {"deny": [PUSH]}, trusted=False
    ),
    case("user deny beats project allow", "git push", "deny", {"deny": [PUSH]}, allow(PUSH)),
    case("project deny beats user allow", "git push", "deny", allow(PUSH), {"deny": [PUSH]}),
    case("project ask beats user allow", "git push", "ask", allow(PUSH), {"ask": [PUSH]}),
    case("project allow beats user ask", "git push", "allow", {"ask": [PUSH]}, allow(PUSH)),
    case("ask beats allow in one level", "git push", "ask", {"allow": [PUSH], "ask": [PUSH]}),
    case("deny beats allow in one level", "git push", "deny", {"allow": [PUSH], "deny": [PUSH]}),
    case("bare tool deny", "git push", "deny", {"allow": [PUSH], "deny": ["run_command"]}),
    case("bare tool allow", "make -j8", "allow", allow("run_command")),
    case("exact rule, extra word", "git push --force", "ask", allow(PUSH)),
    case("prefix rule", "npm run test -- -k x", "allow", allow(NPM)),
    case("prefix rule, other word", "npm run testing", "ask", allow(NPM)),
    case("every part allowed", "git status && echo ok; echo done", "allow", allow(STATUS, ECHO)),
    case("one part not allowed", "git status && git push", "ask", allow(STATUS)),
    case("one part denied", "git push || rm x", "deny", {"allow": [PUSH], "deny": [RM]}),
    case("substitution denied", "echo $(rm x)", "deny", {"allow": [ECHO], "deny": [RM]}),
    case("deny through sudo", "sudo -u root rm x", "deny", {"deny": [RM]}),
    case("deny through env", "env -i A=1 rm x", "deny", {"deny": [RM]}),
    case("deny through env -S", "env -S 'rm x'", "deny", {"deny": [RM]}),
    case("deny through a path", "/bin/rm x", "deny", {"deny": [RM]}),
    case("deny through an assignment", "A=1 rm x", "deny", {"deny": [RM]}),
    case("deny through timeout", "timeout -s KILL 5 rm x", "deny", {"deny": [RM]}),
    case("deny through xargs", "ls | xargs -n 1 rm", "deny", {"deny": [RM]}),
    case("deny through bash -c", "bash -lc 'cd x && rm y'", "deny", {"deny": [RM]}),
    case("deny through a function", "f() { rm x; }; f", "deny", {"deny": [RM]}),
    case("deny through env bash -c", "env bash -c 'rm x'", "deny", {"deny": [RM]}),
    case("deny through nohup sh -c", "nohup sh -c 'rm x'", "deny", {"deny": [RM]}),
    case("deny through timeout bash -c", "timeout 5 bash -c 'rm x'", "deny", {"deny": [RM]}),
    case("deny through bash -c --", "bash -c -- 'rm -rf src'", "deny", {"deny": [RM]}),
    case("deny through bash -o … -c", "bash -o pipefail -c 'rm x'", "deny", {"deny": [RM]}),
    case("deny through builtin eval", "builtin eval 'rm x'", "deny", {"deny": [RM]}),
    case("deny through command eval", "command eval 'rm x'", "deny", {"deny": [RM]}),
    case("deny through sudo bash -c", "sudo -u root bash -c 'rm x'", "deny", {"deny": [RM]}),
    case("deny through env -iu", "env -iu FOO rm x", "deny", {"deny": [RM]}),
    case("deny through sudo --user", "sudo --user root rm x", "deny", {"deny": [RM]}),
    case("deny through xargs -i", "ls | xargs -i rm {}", "deny", {"deny": [RM]}),
    case("deny through busybox", "busybox rm x", "deny", {"deny": [RM]}),
    case("run-time bash -c asks", "X='rm x'; bash -c \"$X\"", "ask", allow("run_command")),
    case("run-time eval asks", "X='rm x'; eval \"$X\"", "ask", allow("run_command")),
    case("run-time env bash -c asks", 'env bash -c "$X"', "ask", allow("run_command")),
    case("a script on stdin asks", "echo rm x | sh", "ask", allow("run_command")),
    case("a sourced substitution asks", "source <(echo rm x)", "ask", allow("run_command")),
    case("run-time wrapper word asks", "timeout $T rm x", "ask", allow("run_command")),
    case("here-doc backticks ask", "echo hi <<EOF\n`touch x`\nEOF", "ask", allow(ECHO)),
    case("here-doc $( after a tab asks", "echo hi <<EOF\n\t$(touch x)\nEOF", "ask", allow(ECHO)),
    case("here-doc $( after spaces asks", "echo hi <<EOF\n  $(touch x)\nEOF", "ask", allow(ECHO)),
    case("quoted here-doc is data", "echo hi <<'EOF'\n`touch x`\nEOF", "allow", allow(ECHO)),
    case("here-doc without substitutions", "echo hi <<EOF\nplain $HOME\nEOF", "allow", allow(ECHO)),
    case(
        "command after a here-doc start",
        "echo hi <<EOF && rm x\nhi\nEOF",
        "deny",
        {"allow": [ECHO], "deny": [RM]},
    ),
    case("pipe after a here-doc start", "echo hi <<EOF | sh\nrm x\nEOF", "ask", allow(ECHO)),
    case("words after a here-doc start", "echo <<EOF rm x\nEOF", "ask", allow("run_command")),
    case("allow does not cover a wrapper", "env git status", "ask", allow(STATUS)),
    case("allow does not cover an assignment", "PATH=/tmp git status", "ask", allow(STATUS)),
    case("allow does not cover $X", "touch $HOME", "ask", allow("run_command(touch:*)")),
    case("unparseable asks despite bare allow", 'echo "open', "ask", allow("run_command")),
    case("unknown name asks despite bare allow", "$X status", "ask", allow("run_command")),
    case("unparseable is denied by bare deny", 'echo "open', "deny", {"deny": ["run_command"]}),
    case("redirect inside is a write", "echo hi > out.txt", "ask", allow(ECHO)),
    case(
        "redirect, write_file rule",
        "echo hi > out.txt",
        "allow",
        allow(ECHO, "write_file(out.txt)"),
    ),
    case("redirect, edit family", "echo hi >> logs/x.log", "allow", allow(ECHO, EDIT_ALL)),
    case("redirect outside asks", "echo hi > /tmp/x", "ask", allow(ECHO, EDIT_ALL)),
    case(
        "redirect outside, absolute rule",
        "echo > /tmp/x",
        "allow",
        allow(ECHO, "write_file(/tmp/x)"),
    ),
    case("redirect into .git asks", "echo x > .git/hooks/pre-commit", "ask", allow(ECHO, EDIT_ALL)),
    case(
        "redirect denied",
        "echo x > src/a.py",
        "deny",
        {"allow": [ECHO], "deny": ["write_file(src)"]},
    ),
    case("input redirect inside is a read", "cat < src/a.py", "allow", allow("run_command(cat)")),
    case("input redirect outside asks", "cat < /etc/passwd", "ask", allow("run_command(cat)")),
    case("redirect target unknown asks", "echo x > $F", "ask", allow(ECHO, EDIT_ALL)),
    case(
        "redirect after cd asks",
        "cd src && echo x > a",
        "ask",
        allow(ECHO, "run_command(cd src)", EDIT_ALL),
    ),
]


@pytest.mark.parametrize("case", CHAIN_CASES)
def test_chain_precedence(workspace: Path, case: Case) -> None:
    decision = policy(workspace, case.user, case.project, trusted=case.trusted).decide(
        *run(case.command)
    )
    assert decision.verdict == case.verdict, decision.reason
    assert decision.reason


def test_project_local_rules_are_the_same_level_as_project_rules(workspace: Path) -> None:
    write_project_rules(workspace, {"allow": [PUSH]}, local=True)
    assert policy(workspace).decide(*run("git push")).verdict == "allow"
    write_project_rules(workspace, {"deny": [PUSH]})
    assert policy(workspace).decide(*run("git push")).verdict == "deny"


def test_the_reason_names_the_rule_and_its_file(workspace: Path) -> None:
    user_file = write_user_rules({"deny": ["run_command(rm:*)"]})
    decision = RulePolicy.load(workspace).decide(*run("rm -rf build"))
    assert decision.verdict == "deny"
    assert "run_command(rm:*)" in decision.reason
    assert str(user_file) in decision.reason


def test_a_decision_names_its_rule_its_level_and_the_parts_it_read(workspace: Path) -> None:
    """What the trace shows of each decision (issue 16)."""
    write_user_rules({"deny": [RM], "allow": [ECHO]})
    write_project_rules(workspace, {"allow": [STATUS]})
    trust_folder(workspace)
    chain = RulePolicy.load(workspace)
    denied = chain.decide(*run("echo hi && rm -rf build"))
    assert (denied.verdict, denied.level) == ("deny", "user") and RM in denied.rule
    assert denied.parts == ("run `echo hi`", "run `rm -rf build`")
    allowed = chain.decide(*run("git status"))
    assert (allowed.verdict, allowed.level) == ("allow", "project") and STATUS in allowed.rule
    default = chain.decide(*run("make"))
    assert (default.verdict, default.level, default.rule) == ("ask", "default", "")
    never = RulePolicy.load(workspace, "never-ask").decide(*run("make"))
    assert (never.verdict, never.level, never.parts) == ("deny", "default", ("run `make`",))
    mode = RulePolicy.load(workspace, "read-only").decide(*run("touch x"))
    assert (mode.verdict, mode.level) == ("deny", "mode")


# --- file tools --------------------------------------------------------------------

# (id, user rules, tool, path, verdict)
FILE_CASES: list[tuple[str, dict[str, list[str]], str, str, str]] = [
    ("read inside", {}, "read_file", "src/a.py", "allow"),
    ("read the workspace root", {}, "list_dir", ".", "allow"),
    ("read outside", {}, "read_file", "/etc/hosts", "ask"),
    ("read ../", {}, "read_file", "../x", "ask"),
    ("read ~/", {}, "read_file", "~/.ssh/id_rsa", "ask"),
    (
        "read outside, absolute read rule",
        {"allow": ["read(/etc/**)"]},
        "read_file",
        "/etc/hosts",
        "allow",
    ),
    ("read denied by family rule", {"deny": ["read(.env)"]}, "read_file", ".env", "deny"),
    ("read denied, dotted path", {"deny": ["read(.env)"]}, "read_file", "./src/../.env", "deny"),
    ("write inside asks", {}, "write_file", "src/b.py", "ask"),
    (
        "write allowed by glob",
        {"allow": ["write_file(src/**)"]},
        "write_file",
        "src/new/b.py",
        "allow",
    ),
    (
        "write glob does not cover traversal",
        {"allow": ["write_file(src/**)"]},
        "write_file",
        "src/../b.py",
        "ask",
    ),
    (
        "write_file rule is not edit_file",
        {"allow": ["write_file(src/**)"]},
        "edit_file",
        "src/a.py",
        "ask",
    ),
    ("edit family covers edit_file", {"allow": ["edit(src/**)"]}, "edit_file", "src/a.py", "allow"),
    (
        "edit family covers write_file",
        {"allow": ["edit(src/**)"]},
        "write_file",
        "src/a.py",
        "allow",
    ),
    ("write outside asks", {"allow": ["edit(**)"]}, "write_file", "/tmp/x", "ask"),
    (
        "write .git asks despite rule",
        {"allow": ["edit(**)"]},
        "write_file",
        ".git/hooks/pre-commit",
        "ask",
    ),
    ("write .GIT asks (case folded)", {"allow": ["edit(**)"]}, "write_file", ".GIT/config", "ask"),
    (
        "write .codecoder asks despite rule",
        {"allow": ["edit(**)"]},
        "write_file",
        ".codecoder/config.toml",
        "ask",
    ),
    (
        "write nested .git asks",
        {"allow": ["edit(**)"]},
        "write_file",
        "vendor/lib/.git/config",
        "ask",
    ),
    ("write .gitignore is ordinary", {"allow": ["edit(**)"]}, "write_file", ".gitignore", "allow"),
    ("write .git denied by rule", {"deny": ["edit(.git/**)"]}, "write_file", ".git/config", "deny"),
]


@pytest.mark.parametrize(
    ("user", "tool", "path", "verdict"),
    [case[1:] for case in FILE_CASES],
    ids=[case[0] for case in FILE_CASES],
)
def test_file_tools(
    workspace: Path, user: dict[str, list[str]], tool: str, path: str, verdict: str
) -> None:
    decision = policy(workspace, user).decide(*call(tool, path=path, content="x"))
    assert decision.verdict == verdict, decision.reason


@pytest.mark.parametrize(
    ("args", "verdict"),
    [
        ({"pattern": "**/*.py"}, "allow"),
        ({"pattern": "src/**/*.py"}, "allow"),
        ({"pattern": "*.md", "path": "src"}, "allow"),
        ({"pattern": "../**"}, "ask"),
        ({"pattern": "../../*/id_rsa"}, "ask"),
        ({"pattern": "/etc/*"}, "ask"),
        ({"pattern": "~/.ssh/*"}, "ask"),
        ({"pattern": "**", "path": ".."}, "ask"),
        ({"pattern": "../*.py", "path": "src"}, "allow"),
    ],
)
def test_a_glob_reads_where_its_pattern_starts(
    workspace: Path, args: dict[str, str], verdict: str
) -> None:
    decision = policy(workspace).decide(*call("glob", **args))
    assert decision.verdict == verdict, decision.reason


def test_grep_reads_its_path_not_its_regex(workspace: Path) -> None:
    assert policy(workspace).decide(*call("grep", pattern="/etc/passwd")).verdict == "allow"
    assert policy(workspace).decide(*call("grep", pattern="x", path="/etc")).verdict == "ask"


def test_a_symlink_out_of_the_workspace_is_outside(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    (workspace / "dangling").symlink_to(outside / "new-file")
    full_auto = policy(workspace, mode="full-auto")
    for path in ("link/x.txt", "dangling"):
        decision = full_auto.decide(*call("write_file", path=path, content="x"))
        assert decision.verdict == "ask", path
        assert str(outside) in decision.reason
    assert full_auto.decide(*call("read_file", path="link/x.txt")).verdict == "ask"
    assert full_auto.decide(*run("echo x > link/y")).verdict == "ask"


def test_a_symlink_into_git_is_protected(workspace: Path) -> None:
    (workspace / "hooks").symlink_to(workspace / ".git" / "hooks")
    full_auto = policy(workspace, {"allow": ["edit(**)"]}, mode="full-auto")
    decision = full_auto.decide(*call("write_file", path="hooks/pre-commit", content="x"))
    assert decision.verdict == "ask"
    assert ".git" in decision.reason


def test_a_symlinked_workspace_is_the_same_workspace(workspace: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    auto = RulePolicy.load(alias, "auto-edit")
    assert (
        auto.decide(*call("write_file", path=str(workspace / "src/b.py"), content="")).verdict
        == "allow"
    )
    assert (
        auto.decide(*call("write_file", path=str(alias / "src/b.py"), content="")).verdict
        == "allow"
    )


def test_writes_to_the_user_config_ask_even_in_full_auto(
    workspace: Path, isolated_home: Path
) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "codecoder"
    extra = RulePolicy(workspace, "full-auto", extra_roots=[config])
    decision = extra.decide(*call("write_file", path=str(config / "config.toml"), content=""))
    assert decision.verdict == "ask"
    assert "configuration" in decision.reason


def test_extra_roots_count_as_inside(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    auto = RulePolicy(workspace, "auto-edit", extra_roots=[other])
    assert auto.decide(*call("write_file", path=str(other / "x"), content="")).verdict == "allow"
    assert auto.decide(*call("write_file", path=str(tmp_path / "x"), content="")).verdict == "ask"


def test_a_cwd_outside_the_workspace_asks(workspace: Path) -> None:
    allowed = policy(workspace, {"allow": ["run_command(ls)"]})
    assert allowed.decide(*run("ls", cwd="src")).verdict == "allow"
    assert allowed.decide(*run("ls", cwd="..")).verdict == "ask"
    assert allowed.decide(*run("ls", cwd="/")).verdict == "ask"


def test_the_cwd_is_resolved_as_run_command_resolves_it(isolated_home: Path) -> None:
    """`~` in cwd is the home folder for the tool (tools/shell.py), so for the check too:
    redirections are judged in the folder the command really runs in."""
    (isolated_home / "sub").mkdir()
    rules = {"allow": ["run_command(echo:*)", "write_file(sub/**)"]}
    allowed = policy(isolated_home, rules)
    assert allowed.decide(*run("echo x > f", cwd="~/sub")).verdict == "allow"
    assert allowed.decide(*run("echo x > f", cwd="~")).verdict == "ask"
    full_auto = policy(isolated_home, mode="full-auto")
    decision = full_auto.decide(*run("echo x > config.toml", cwd="~/.config/codecoder"))
    assert decision.verdict == "ask"
    assert "configuration" in decision.reason
    assert full_auto.decide(*run("echo x > f", cwd="~/sub")).verdict == "allow"
    assert full_auto.decide(*run("ls", cwd="a\x00b")).verdict == "ask"


def test_redirections_resolve_against_the_cwd(workspace: Path) -> None:
    rules = {"allow": ["run_command(echo:*)", "write_file(src/**)"]}
    allowed = policy(workspace, rules)
    assert allowed.decide(*run("echo x > b.py", cwd="src")).verdict == "allow"
    assert allowed.decide(*run("echo x > b.py")).verdict == "ask"


def test_web_tools_match_domains(workspace: Path) -> None:
    rules = {"allow": ["web_fetch(domain:docs.python.org)"]}
    allowed = policy(workspace, rules)
    assert allowed.decide(*call("web_fetch", url="https://docs.python.org/3/")).verdict == "allow"
    assert allowed.decide(*call("web_fetch", url="https://evil.example/x")).verdict == "ask"
    assert allowed.decide(*call("web_fetch", url="not a url")).verdict == "ask"


def test_arguments_of_the_wrong_type_are_never_allowed(workspace: Path) -> None:
    bare = policy(workspace, {"allow": ["run_command", "read_file"]})
    assert bare.decide(*run(["rm", "-rf", "/"])).verdict == "ask"  # type: ignore[arg-type]
    assert bare.decide(*call("read_file", path=3)).verdict == "ask"
    assert bare.decide(*call("read_file", path="a\x00b")).verdict == "ask"


def test_paths_of_an_unknown_user_ask_instead_of_crashing(workspace: Path) -> None:
    bare = policy(workspace, {"allow": ["run_command", "read_file"]})
    decision = bare.decide(*call("read_file", path="~nosuchuser9/x"))
    assert decision.verdict == "ask" and "nosuchuser9" in decision.reason
    assert bare.decide(*run("ls", cwd="~nosuchuser9")).verdict == "ask"
