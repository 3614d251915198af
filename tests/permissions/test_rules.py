"""Rule syntax: parsing, errors that name the file and the rule, and matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from codecoder.config import ConfigError
from codecoder.permissions.rules import (
    CommandPattern,
    DomainPattern,
    PathPattern,
    command_rule,
    parse_rule,
    parse_table,
    path_rule,
)


def test_bare_tool_and_patterns_parse() -> None:
    assert parse_rule("run_command", "f").pattern is None
    exact = parse_rule("run_command(git status)", "f").pattern
    assert exact == CommandPattern(words=("git", "status"), prefix=False)
    prefix = parse_rule("run_command(npm run test:*)", "f").pattern
    assert prefix == CommandPattern(words=("npm", "run", "test"), prefix=True)
    quoted = parse_rule("run_command(git commit -m 'a b')", "f").pattern
    assert quoted == CommandPattern(words=("git", "commit", "-m", "a b"), prefix=False)
    assert isinstance(parse_rule("write_file(src/**)", "f").pattern, PathPattern)
    domain = parse_rule("web_fetch(domain:Docs.Python.org)", "f").pattern
    assert domain == DomainPattern(host="docs.python.org", subdomains=False)
    assert parse_rule("mcp__github__create_issue", "f").tool == "mcp__github__create_issue"


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ("", "tool name"),
        ("run command", "tool name"),
        ("run_command(git status", "closing parenthesis"),
        ("run_command()", "empty"),
        ("run_command(  )", "empty"),
        ("run_command(ls *)", "trailing `:*`"),
        ("run_command(echo 'unbalanced)", "quotation"),
        ("web_fetch(domain:)", "domain:"),
        ("web_fetch(domain:bad host)", "domain:"),
        ("write_file(../outside/**)", "`..`"),
        ("read_file(~bob/x)", "`~/`"),
        ("(x)", "tool name"),
    ],
)
def test_a_bad_rule_is_a_config_error_naming_file_and_rule(rule: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rule(rule, "/home/u/.config/codecoder/config.toml")
    message = str(caught.value)
    assert message.startswith("/home/u/.config/codecoder/config.toml: bad permission rule")
    assert repr(rule) in message
    assert fragment in message


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ("not a table", "must be a table"),
        ({"allow": "run_command"}, "allow must be a list of strings"),
        ({"deny": [1]}, "deny must be a list of strings"),
        ({"ask": ["run_command(x"]}, "bad permission rule"),
    ],
)
def test_a_bad_table_is_a_config_error(table: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_table(table, "proj/.codecoder/config.toml")


def test_a_table_keeps_the_three_lists() -> None:
    rules = parse_table(
        {"allow": ["read_file", "run_command(ls)"], "deny": ["web_fetch"]}, "user.toml"
    )
    assert [r.text for r in rules.allow] == ["read_file", "run_command(ls)"]
    assert [r.text for r in rules.deny] == ["web_fetch"]
    assert rules.ask == ()
    assert all(r.source == "user.toml" for r in rules.allow)


@pytest.mark.parametrize(
    ("pattern", "words", "loose", "expected"),
    [
        ("git status", ["git", "status"], False, True),
        ("git status", ["git", "status", "-s"], False, False),
        ("git status", ["git"], False, False),
        ("npm run test:*", ["npm", "run", "test"], False, True),
        ("npm run test:*", ["npm", "run", "test", "--", "-k", "x"], False, True),
        ("npm run test:*", ["npm", "run", "testing"], False, False),
        ("npm run test:*", ["npm", "run"], False, False),
        ("echo:*", ["echo", None], False, False),  # an allow never covers `$X`
        ("echo:*", ["echo", None], True, True),  # a deny or ask may
        ("rm -rf /", ["rm", "-rf", None], True, True),
        ("rm -rf /", [None, "-rf", "/"], True, True),
        ("rm -rf /", ["rm", "-r", "/"], True, False),
    ],
)
def test_command_patterns(
    pattern: str, words: list[str | None], loose: bool, expected: bool
) -> None:
    rule = parse_rule(f"run_command({pattern})", "f")
    assert isinstance(rule.pattern, CommandPattern)
    assert rule.pattern.matches(words, loose=loose) is expected


@pytest.mark.parametrize(
    ("glob", "relative", "absolute", "expected"),
    [
        ("src/**", "src/a.py", "/w/src/a.py", True),
        ("src/**", "src/deep/er/a.py", "/w/src/deep/er/a.py", True),
        ("src/**", "srcx/a.py", "/w/srcx/a.py", False),
        ("src", "src/a.py", "/w/src/a.py", True),
        ("src/", "src/a.py", "/w/src/a.py", True),
        ("*.md", "README.md", "/w/README.md", True),
        ("*.md", "docs/x.md", "/w/docs/x.md", False),
        ("**/*.md", "docs/x.md", "/w/docs/x.md", True),
        ("**/*.md", "x.md", "/w/x.md", True),
        ("docs/?.txt", "docs/a.txt", "/w/docs/a.txt", True),
        ("docs/[ab].txt", "docs/c.txt", "/w/docs/c.txt", False),
        ("docs/[!ab].txt", "docs/c.txt", "/w/docs/c.txt", True),
        ("./src/**", "src/a", "/w/src/a", True),
        (".", "anything/at/all", "/w/anything/at/all", True),
        ("src/**", None, "/elsewhere/src/a", False),
        ("/etc/**", None, "/etc/hosts", True),
        ("/etc/**", "etc/hosts", "/w/etc/hosts", False),
    ],
)
def test_path_patterns(glob: str, relative: str | None, absolute: str, expected: bool) -> None:
    rule = parse_rule(f"write_file({glob})", "f")
    assert isinstance(rule.pattern, PathPattern)
    assert rule.pattern.matches(relative, absolute) is expected


def test_home_patterns_expand_to_the_home_folder(isolated_home: Path) -> None:
    rule = parse_rule("read(~/notes/**)", "f")
    assert isinstance(rule.pattern, PathPattern)
    assert rule.pattern.matches(None, f"{isolated_home}/notes/a.md")
    assert not rule.pattern.matches(None, "/root/notes/a.md")


@pytest.mark.parametrize(
    ("host", "candidate", "expected"),
    [
        ("docs.python.org", "docs.python.org", True),
        ("docs.python.org", "DOCS.python.org.", True),
        ("docs.python.org", "evil.docs.python.org", False),
        ("docs.python.org", "docs.python.org.evil.com", False),
        ("*.python.org", "docs.python.org", True),
        ("*.python.org", "python.org", True),
        ("*.python.org", "notpython.org", False),
    ],
)
def test_domain_patterns(host: str, candidate: str, expected: bool) -> None:
    rule = parse_rule(f"web_fetch(domain:{host})", "f")
    assert isinstance(rule.pattern, DomainPattern)
    assert rule.pattern.matches(candidate) is expected


@pytest.mark.parametrize(
    "words", [["git", "status"], ["git", "commit", "-m", "it's (done) *now*"], ["a b", "c"]]
)
def test_written_command_rules_parse_back_to_the_same_words(words: list[str]) -> None:
    rule = parse_rule(command_rule(words), "f")
    assert rule.pattern == CommandPattern(words=tuple(words), prefix=False)


@pytest.mark.parametrize("path", ["src/a.py", "odd[1]/x*.py", "q?.txt", "a (copy).md"])
def test_written_path_rules_match_exactly_that_path(path: str) -> None:
    rule = parse_rule(path_rule("write_file", path), "f")
    assert isinstance(rule.pattern, PathPattern)
    assert rule.pattern.matches(path, "/w/" + path)
    assert not rule.pattern.matches(path.replace("a", "b", 1) + "x", "/w/other")
