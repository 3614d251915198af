"""Permission rules as written in `[permissions] allow / ask / deny` (docs/permissions.md).

    run_command                      every call of the tool
    run_command(git status)          exactly that command (compared word by word)
    run_command(npm run test:*)      a command whose words start with `npm run test`
    write_file(src/**)               a path glob, relative to the workspace root
    edit(src/**)  read(~/notes/**)   a family: every file tool that writes / reads
    web_fetch(domain:docs.python.org)  a host (`domain:*.python.org`: it and subdomains)
    unsandboxed(npm publish:*)       a command run outside the sandbox (`run_command` with
                                     `sandbox: false`): its own pattern, as run_command's
    mcp__git__*                      every tool whose name the `*` glob matches (no pattern)

A rule that cannot be parsed is a ConfigError naming the file and the rule, so that a
typo never silently allows or fails to deny something.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any, Literal

import msgspec

from codecoder.config import ConfigError

RuleAction = Literal["allow", "ask", "deny"]
ACTIONS: tuple[RuleAction, ...] = ("allow", "ask", "deny")

COMMAND_TOOL = "run_command"
UNSANDBOXED = "unsandboxed"
"""The rule name of an escalation (permissions/chain.py): what such a rule names is
matched as a run_command pattern."""
READ_FAMILY = "read"
EDIT_FAMILY = "edit"
"""`read(…)` and `edit(…)` name every file tool that reads, respectively writes."""

_QUOTED = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|\\.""")
_TOOL_NAME = re.compile(r"[A-Za-z_*][A-Za-z0-9_.\-*]*")
_HOST = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9\-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9\-]*[a-z0-9])?)*")


class CommandPattern(msgspec.Struct, frozen=True):
    words: tuple[str, ...]
    prefix: bool

    def matches(self, words: Sequence[str | None], *, loose: bool) -> bool:
        """`words` holds None for a word only known at run time. An allow rule (`loose`
        False) never matches such a word; deny and ask rules (`loose`) assume it might."""
        if len(words) < len(self.words) or (not self.prefix and len(words) != len(self.words)):
            return False
        if not loose and any(word is None for word in words):
            return False
        return all(
            word is None or word == expected
            for word, expected in zip(words, self.words, strict=False)
        )


class PathPattern(msgspec.Struct, frozen=True):
    glob: str
    regex: re.Pattern[str]
    anchor: Literal["workspace", "absolute"]

    def matches(self, relative: str | None, absolute: str) -> bool:
        """`relative` is the path relative to the workspace root, None when outside it."""
        if self.anchor == "absolute":
            return self.regex.fullmatch(absolute) is not None
        return relative is not None and self.regex.fullmatch(relative) is not None


class DomainPattern(msgspec.Struct, frozen=True):
    host: str
    subdomains: bool

    def matches(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        if host == self.host:
            return True
        return self.subdomains and host.endswith("." + self.host)


Pattern = CommandPattern | PathPattern | DomainPattern | None


class Rule(msgspec.Struct, frozen=True):
    """One parsed rule; `source` names the file it came from (for reasons and errors)."""

    text: str
    tool: str
    pattern: Pattern
    source: str

    def names(self, tool: str, families: Iterable[str] = ()) -> bool:
        """Whether the rule is about `tool` (or one of its `families`); a `*` in the rule's
        tool name matches any run of characters of a tool's name, never a family."""
        if "*" in self.tool:
            return _tool_glob(self.tool).fullmatch(tool) is not None
        return self.tool == tool or self.tool in families

    def describe(self) -> str:
        return f"{self.text} ({self.source})"


class RuleSet(msgspec.Struct, frozen=True):
    """The `[permissions]` table of one file."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()


def parse_rule(text: str, source: str) -> Rule:
    """Parse one rule; raises ConfigError naming `source` and the rule."""
    try:
        return _parse_rule(text, source)
    except ValueError as exc:
        raise ConfigError(f"{source}: bad permission rule {text!r}: {exc}") from exc


def _parse_rule(text: str, source: str) -> Rule:
    stripped = text.strip()
    if "(" not in stripped:
        _check_tool_name(stripped)
        return Rule(text=stripped, tool=stripped, pattern=None, source=source)
    tool, _, rest = stripped.partition("(")
    tool = tool.strip()
    _check_tool_name(tool)
    if "*" in tool:
        raise ValueError("a tool name with `*` (`mcp__git__*`) takes no pattern in parentheses")
    if not rest.endswith(")"):
        raise ValueError("expected `tool(pattern)` with a closing parenthesis")
    body = rest[:-1].strip()
    if not body:
        raise ValueError("the pattern in parentheses is empty")
    return Rule(text=stripped, tool=tool, pattern=_parse_pattern(tool, body), source=source)


def _check_tool_name(name: str) -> None:
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError("expected a tool name such as `run_command` or `write_file`")


@functools.cache
def _tool_glob(name: str) -> re.Pattern[str]:
    return re.compile(".*".join(map(re.escape, name.split("*"))))


def _parse_pattern(tool: str, body: str) -> Pattern:
    if body.startswith("domain:"):
        return _parse_domain(body.removeprefix("domain:").strip())
    if tool in (COMMAND_TOOL, UNSANDBOXED):
        return _parse_command(body)
    return _parse_path(body)


def _parse_command(body: str) -> CommandPattern:
    prefix = body.endswith(":*")
    words_text = body[:-2] if prefix else body
    words = tuple(shlex.split(words_text))
    if not words:
        raise ValueError("the command pattern has no words")
    if "*" in _QUOTED.sub("", words_text):
        raise ValueError("`*` is only allowed as a trailing `:*` (prefix match)")
    return CommandPattern(words=words, prefix=prefix)


def _parse_domain(host: str) -> DomainPattern:
    host = host.lower().rstrip(".")
    if not _HOST.fullmatch(host):
        raise ValueError("expected `domain:example.com` or `domain:*.example.com`")
    if host.startswith("*."):
        return DomainPattern(host=host[2:], subdomains=True)
    return DomainPattern(host=host, subdomains=False)


def _parse_path(glob: str) -> PathPattern:
    if "\x00" in glob:
        raise ValueError("the path pattern contains a NUL character")
    anchor: Literal["workspace", "absolute"] = "workspace"
    expanded = glob
    if glob == "~" or glob.startswith("~/"):
        expanded = os.path.expanduser(glob)
    if expanded.startswith("/"):
        anchor = "absolute"
    elif glob.startswith("~"):
        raise ValueError("only `~/` (your home) is understood at the start of a path")
    normal = _normalise_glob(expanded)
    return PathPattern(glob=glob, regex=re.compile(glob_to_regex(normal)), anchor=anchor)


def _normalise_glob(glob: str) -> str:
    absolute = glob.startswith("/")
    parts = [part for part in PurePosixPath(glob).parts if part not in ("/", ".")]
    if ".." in parts:
        raise ValueError("`..` is not allowed in a path pattern; use an absolute path")
    joined = "/".join(parts)
    return "/" + joined if absolute else joined


def glob_to_regex(glob: str) -> str:
    """Glob to regex: `**` spans folders, `*` and `?` stay within one, `[…]` is a class.
    A pattern also matches everything below what it names (`src` covers `src/a.py`)."""
    out: list[str] = []
    index = 0
    while index < len(glob):
        piece, index = _glob_piece(glob, index)
        out.append(piece)
    body = "".join(out)
    if glob in ("", "/"):
        return "/.*" if glob == "/" else ".*"
    return body + "(?:/.*)?"


def _glob_piece(glob: str, index: int) -> tuple[str, int]:
    char = glob[index]
    if glob.startswith("**/", index):
        return "(?:.*/)?", index + 3
    if glob.startswith("**", index):
        return ".*", index + 2
    if char == "*":
        return "[^/]*", index + 1
    if char == "?":
        return "[^/]", index + 1
    if char == "[":
        end = glob.find("]", index + 2)
        if end > 0:
            inner = glob[index + 1 : end]
            negate = inner.startswith("!")
            inner = re.escape(inner[1:] if negate else inner).replace("\\-", "-")
            return f"[{'^' if negate else ''}{inner}]", end + 1
    return re.escape(char), index + 1


def parse_table(table: Any, source: str) -> RuleSet:
    """The rules of a `[permissions]` table (`table` as read from TOML)."""
    if table is None:
        return RuleSet()
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [permissions] must be a table")
    lists: dict[str, tuple[Rule, ...]] = {}
    for action in ACTIONS:
        items = table.get(action, [])  # type: ignore[union-attr]
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):  # type: ignore[union-attr]
            raise ConfigError(f"{source}: [permissions] {action} must be a list of strings")
        lists[action] = tuple(parse_rule(item, source) for item in items)  # type: ignore[union-attr]
    return RuleSet(**lists)


def command_rule(words: Sequence[str]) -> str:
    """The exact rule text for a command (what "always for this project" writes)."""
    return f"{COMMAND_TOOL}({shlex.join(words)})"


def path_rule(tool: str, relative_or_absolute: str) -> str:
    return f"{tool}({_escape_glob(relative_or_absolute)})"


def _escape_glob(path: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", path)
