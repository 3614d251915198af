"""The built-in read-only list (programs.read_only): plain reads run without a question,
in every mode, with no rule; anything that could run or write more does not."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

import pytest

from codecoder.kernel.events import ConfirmRequest, ToolFinished
from codecoder.permissions import RulePolicy
from codecoder.permissions.modes import MODES, ApprovalMode
from codecoder.permissions.writes import writes_nothing

from .helpers import World, call, drive, run, write_user_rules

PLAIN_READS = [
    "ls",
    "ls -la src",
    "cat README.md",
    "head -n 5 README.md | wc -l",
    "tail -n +2 README.md",
    "grep -rn hello .",
    "grep -e hello README.md",
    "rg hello src",
    "find . -name '*.py' -type f",
    "git status",
    "git log --oneline -5",
    "git diff HEAD~1 -- src",
    "git show HEAD:README.md",
    "git branch -a",
    "sed -n '1,20p' README.md",
    "echo $HOME",
    "pwd && which git",
    "cat src/*.py",
    "cd src && ls",
    "wc -l README.md src/a.py",
    "sort README.md | uniq -c",
    "diff README.md src/a.py",
    "stat README.md",
    "[ -f README.md ] && echo yes",
    "cd src && cat a.py",
    "cd src && grep -n hello a.py",
    "uniq -f 1 README.md",
    "git -C src log",
    "git reflog -5",
    "git tag -l 'v*'",
    "base64 README.md",
    "uniq --skip-chars 1 README.md",
    # bracket expressions that hold the delimiter, read as GNU sed reads them
    "sed -n 's/[/]/x/p' README.md",
    "sed -n '\\,[,],p;s|[^|]|x|g' README.md",
    "sed -n '/[[:alpha:]/]/p;:a' README.md",
    "rg --ignore-file README.md hello src",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("hello\n")
    (ws / "src" / "a.py").write_text("print('hello')\n")
    return ws


@pytest.mark.parametrize("mode", [m for m in MODES if m != "read-only"] + ["read-only"])
@pytest.mark.parametrize("line", PLAIN_READS)
def test_a_plain_read_runs_in_every_mode(workspace: Path, mode: ApprovalMode, line: str) -> None:
    decision = RulePolicy(workspace, mode).decide(*run(line))
    assert decision.verdict == "allow", decision.reason


NOT_PLAIN = [
    "ls > listing.txt",
    "cat README.md | tee copy.txt",
    "cat /etc/passwd",
    "cat ../outside.txt",
    "cat ~/.ssh/id_rsa",
    "head $F",
    "ls $(echo /)",
    "grep -r root /etc",
    "grep -f/etc/passwd x README.md",
    "ls --dir=/etc",
    "find / -name passwd",
    "find . -delete",
    "find . -exec cat {} \\;",
    "rg --pre ./tool hello",
    "rg -z hello",
    "sed -i 's/a/b/' README.md",
    "sed -n 'w out' README.md",
    "sed -n '1e touch x' README.md",
    "git -c core.pager=cat log",
    "git log --output=out",
    "git diff --ext-diff",
    "git diff --no-index /etc/passwd README.md",
    "git --git-dir=sub status",
    "git branch new-branch",
    "git tag v1",
    "git config core.editor vim",
    "git stash",
    "git commit -m x",
    "sort -o out README.md",
    "uniq README.md out",
    "xxd README.md out",
    "tree -o out",
    "date -s 2020-01-01",
    "hostname evil",
    "printf -v x y",
    "./ls",
    "PATH=. ls",
    "LD_PRELOAD=./x.so ls",
    "cd",
    "cd -",
    "cd .. && ls",
    "cd src && cat ../../x",
    "cd src; cd .. && cat a.py",
    "cd nowhere; cat ../outside.txt",
    "env X=1 ls",
    "xargs cat < list",
    "ls .*",
    "cat .*/config",
    "less README.md",
    "awk '{print}' README.md",
    "python3 -c 'print(1)'",
    "touch x",
    # found by the adversarial review: abbreviated long options, clusters, git's words
    "sed -n -e p --exp='1e touch x' README.md",
    "sed -n --exp='w out' README.md",
    "sed -e p --exp='r ~/.ssh/id_rsa' README.md",
    "sed --in-pl 's/a/b/' README.md",
    "git grep --open-f='touch x' -e hello",
    "sort -S 1K --compress-prog=sh README.md",
    "sort --outp=.git/hooks/pre-commit README.md",
    "sort -S 1K -T . README.md",  # its temporary files go where -T says
    "sort --temporary-dir=.git README.md",
    "git remote -v show http://127.0.0.1:9/x",
    "git remote -v add x http://127.0.0.1:9/x",
    "git branch --sort=refname new-branch",
    "git branch --sort=refname -m main renamed",
    "git tag --sort=refname v9",
    "date --s=2020-01-01",
    "hostname --fil=x",
    "file --comp -m m",
    "grep --rege=. ~/.ssh/id_rsa",
    "git diff /dev/null ~/.ssh/id_rsa",
    "git blame --contents=~/.ssh/id_rsa README.md",
    "git config --list --file ~/.my.cnf",
    "date -f ~/.ssh/id_rsa",
    "find -files0-from ~/.ssh/id_rsa",
    "find -- ~/.ssh",
    "jq -n --from-file ~/.ssh/id_rsa",
    "jq -n 'import \"/etc/passwd\" as $c; $c'",
    # the second review
    "cd src | cat ../outside.txt",
    "cd src & cat ../outside.txt",
    "(cd src) && cat ../outside.txt",
    "echo $(cd src) && cat ../outside.txt",
    "f() { cd src; }; cat ../outside.txt",
    "case x in y) cd src;; esac; cat ../outside.txt",
    "cd src; cat ../outside.txt",
    "xxd -ps ../outside.txt",
    "xxd -l 32 README.md",
    "printf '../outside.txt\\0' | sort --files0-from=-",
    "wc --files0-from=-",
    "file -f -",
    "jq --run-tests ../outside.txt",
    "date 010100002020",
    "tree -R -H . -L 1",
    "tree -l",
    "git config --global --list",
    "git config --get-regexp token",
    "git config user.name",
    "grep -R KEY .",
    "rg -L KEY",
    "rg --files ..",
    "cat src/[[:alpha:]].py",
    "ls -LR",
    # issue 25, item 5: an option that names a file it writes (macOS base64 -o)
    "base64 -o out README.md",
    "base64 -Do out README.md",
    "base64 --outp=out README.md",
    "base64 -D -i README.md -o .git/hooks/pre-commit",
    "uniq --skip-chars 1 README.md out",
    "tree -R -H . -L 1 src",
    "sort -uo/tmp/out README.md",
    # the file rg reads its ignore rules from is a read (not its pattern)
    "rg --ignore-file ../outside.txt hello .",
    "rg --ignore-file=../outside.txt hello",
    "rg -n --ignore-f ../outside.txt hello src",
]


@pytest.mark.parametrize("line", NOT_PLAIN)
def test_what_could_do_more_than_read_is_not_on_the_list(workspace: Path, line: str) -> None:
    (workspace.parent / "outside.txt").write_text("secret\n")
    decision = RulePolicy(workspace, "ask").decide(*run(line))
    assert decision.verdict == "ask", decision.reason
    assert RulePolicy(workspace, "never-ask").decide(*run(line)).verdict == "deny"
    assert RulePolicy(workspace, "read-only").decide(*run(line)).verdict in ("ask", "deny")


SED_BRACKETS = ["[/]", "[]/]", "[^/]", "[^]/]", "[[:alpha:]/]", "[[.-.]/]", "[[=a=]/]", "[\\/]"]
"""Bracket expressions that hold the delimiter `/` (also after a backslash, `[\\/]`):
GNU sed ends the regex only after the bracket's `]`, so a scanner that ends it at the
first `/` reads the replacement and the flags in the wrong place."""


def _sed_scripts_behind_brackets() -> list[str]:
    """Each bracket, with each delimiter (and after an escaped one), before an `e` or `w`
    flag, or in an address before `r` or a `w` flag: every one of these runs or opens a
    file in GNU sed 4.9 (checked with `sed --sandbox`, which refuses exactly those)."""
    scripts = []
    for delimiter in "/|,":
        for bracket in [*SED_BRACKETS, "\\/[/]\\/"]:
            b = bracket.replace("/", delimiter)
            d = delimiter
            scripts += [
                f"s{d}{b}*.*{d}touch x;#{d}e",
                f"s{d}{b}*${d}{d}w .git/hooks/pre-commit",
                f"\\{d}{b}{d}r /etc/passwd",
                f"\\{d}{b}{d}s{d}x{d}y{d}w /tmp/out",
            ]
    return scripts


SED_HIDDEN_EFFECTS = [
    *_sed_scripts_behind_brackets(),
    # a label ends at a blank, `;`, `}` or `#`: what follows is a command
    ":a w out",
    "t x w /tmp/out",
    "b x;:x w out",
    "v 4.2 w out",
    # the text of `a\\` takes its next character as it is, then ends at the newline
    "a\\\\\nw out",
    # blanks between the flags, between the addresses and before `!`
    "s/a/b/g w out",
    "1 , 2 w out",
    "/x/ ! w out",
]


@pytest.mark.parametrize("script", SED_HIDDEN_EFFECTS)
def test_a_sed_script_is_read_as_gnu_sed_reads_it(workspace: Path, script: str) -> None:
    """The adversarial review: `sed -n 's/[/]*.*/touch x;#/e'` ran `touch x` as a plain
    read, in every mode (the `e` flag was taken for part of a comment)."""
    line = f"sed -n {shlex.quote(script)} README.md"
    assert RulePolicy(workspace, "ask").decide(*run(line)).verdict == "ask", line
    assert RulePolicy(workspace, "never-ask").decide(*run(line)).verdict == "deny", line
    assert not writes_nothing(line, workspace), line


def test_a_glob_is_judged_by_what_it_matches(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("key\n")
    (workspace / "src" / "link.txt").symlink_to(secret)
    decision = RulePolicy(workspace, "ask").decide(*run("cat src/*"))
    assert decision.verdict == "ask" and "secret.txt" in decision.reason
    os.unlink(workspace / "src" / "link.txt")
    assert RulePolicy(workspace, "ask").decide(*run("cat src/*")).verdict == "allow"


def test_a_link_out_of_the_workspace_is_a_read_outside(workspace: Path, tmp_path: Path) -> None:
    (workspace / "etc").symlink_to("/etc")
    for line in ("cat etc/hostname", "cd etc && ls", "ls etc"):
        assert RulePolicy(workspace, "never-ask").decide(*run(line)).verdict == "deny", line


def test_rules_still_deny_or_ask(workspace: Path) -> None:
    (workspace / ".env").write_text("TOKEN=x\n")
    write_user_rules({"deny": ["read(.env)"], "ask": ["run_command(git log:*)"]})
    policy = RulePolicy.load(workspace, "full-auto")
    assert policy.decide(*run("cat .env")).verdict == "deny"
    assert policy.decide(*run("grep TOKEN .env")).verdict == "deny"
    assert policy.decide(*run("git log")).verdict == "ask"
    assert policy.decide(*run("git status")).verdict == "allow"


def test_read_only_mode_offers_commands_but_runs_only_plain_reads(workspace: Path) -> None:
    policy = RulePolicy(workspace, "read-only")
    assert policy.decide(*run("git status")).verdict == "allow"
    write_user_rules({"allow": ["run_command(touch:*)"]})
    decision = RulePolicy.load(workspace, "read-only").decide(*run("touch x"))
    assert decision.verdict == "deny" and "read-only" in decision.reason


def test_read_only_mode_refuses_a_write_an_option_names(workspace: Path) -> None:
    """Issue 25: `base64 -o` (macOS) writes its output file; in `read-only` mode it passed
    as a plain read, also into the hooks folder."""
    (workspace / ".git" / "hooks").mkdir(parents=True)
    for line in ("base64 -D -i README.md -o .git/hooks/pre-commit", "base64 --output=x README.md"):
        decision = RulePolicy(workspace, "read-only").decide(*run(line))
        assert decision.verdict in ("ask", "deny"), (line, decision.reason)
        assert not writes_nothing(line, workspace), line


def test_never_ask_runs_ls_through_the_kernel(world: World) -> None:
    """The reviewer's complaint: `ls` was denied headless unless a rule allowed it."""
    write_user_rules({})
    events = drive(world, "never-ask", "run_command", {"command": "ls && git status"})
    assert not any(isinstance(e, ConfirmRequest) for e in events)
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.status == "success"
    assert finished.result is not None and "README.md" in finished.result.text


def test_a_read_of_a_folder_asks_when_a_deny_rule_protects_a_file_in_it(workspace: Path) -> None:
    (workspace / ".env").write_text("API_TOKEN=x\n")
    write_user_rules({"deny": ["read(.env)"]})
    policy = RulePolicy.load(workspace, "full-auto")
    for line in ("grep -r API_TOKEN .", "rg --hidden API_TOKEN", "ls"):
        assert policy.decide(*run(line)).verdict == "ask", line
    grep_tool = policy.decide(*call("grep", pattern="API_TOKEN", path="."))
    assert grep_tool.verdict == "ask" and "read(.env)" in grep_tool.reason
    assert policy.decide(*run("grep -r API_TOKEN src")).verdict == "allow"


def test_a_deep_glob_outside_is_decided_at_once(workspace: Path) -> None:
    started = time.monotonic()
    decision = RulePolicy(workspace, "ask").decide(*run("cat /sys/*/*/*/*/*/*/*/nomatch"))
    assert decision.verdict == "ask"
    assert time.monotonic() - started < 2.0
