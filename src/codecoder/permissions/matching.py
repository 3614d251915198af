"""Does a rule name a part? And the full-auto look at a command's arguments.

Allow rules match a command exactly as bash will run it (every word literal, prefix
assignments included), so that `run_command(git status)` never covers `PATH=x git
status` or `git status $X`. Deny and ask rules are read loosely, since missing one is
the costly mistake: they are also tried on the command with its `NAME=value` prefix and
wrappers (`env`, `sudo`, `nohup`, `timeout 5`, `xargs` …) stripped and with the command
name's folder dropped (`/bin/rm` is `rm`), and a word only known at run time matches
anything.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from codecoder.permissions.calls import CommandPart, FilePart, Part, Scope, UrlPart, expand_tilde
from codecoder.permissions.paths import PROTECTED_DIRS, is_inside, real_path
from codecoder.permissions.rules import CommandPattern, DomainPattern, PathPattern, Rule
from codecoder.permissions.shell import Word

Words = list[str | None]

_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "sudo": (frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset(), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-t", "--class", "--classdata"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "setsid": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "watch": (frozenset({"-n", "--interval", "-d"}), 0),
    "xargs": (
        frozenset({"-I", "-i", "-n", "-P", "-L", "-l", "-s", "-d", "-E", "-e", "-a"}),
        0,
    ),
}
NETWORK_CLIENTS = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp"}
)
"""Commands full-auto asks about: what they fetch or send leaves the workspace."""

_NULL_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def values(words: Sequence[Word]) -> Words:
    return [None if word.expands else word.text for word in words]


def command_views(part: CommandPart, *, loose: bool) -> list[Words]:
    """The forms of a command a rule is compared with."""
    exact = values(part.command.words)
    if not loose:
        return [exact]
    views = [exact]
    argv = values(part.command.argv)
    for _ in range(8):
        views.append(argv)
        unwrapped = _unwrap(argv)
        if unwrapped is None:
            break
        argv = unwrapped
    return views + [_basename(view) for view in views]


def _basename(words: Words) -> Words:
    if not words or words[0] is None:
        return words
    return [os.path.basename(words[0]), *words[1:]]


def _unwrap(argv: Words) -> Words | None:
    """argv without its leading wrapper command, or None when it has none."""
    if not argv or argv[0] is None:
        return None
    name = os.path.basename(argv[0])
    if name not in _WRAPPERS:
        return None
    takes_value, positionals = _WRAPPERS[name]
    rest = argv[1:]
    index = 0
    while index < len(rest):
        word = rest[index]
        if word == "--":
            index += 1
            break
        if word is not None and name == "env" and word.startswith(("-S", "--split-string")):
            return _split_string(rest[index + 1 :], word)
        if word is None or not (word.startswith("-") or (name == "env" and "=" in word)):
            break
        index += 2 if word in takes_value else 1
    return rest[index + positionals :] or None


def _split_string(rest: Words, option: str) -> Words | None:
    """`env -S 'cmd args'`: the string is split into the command's words."""
    inline = option.removeprefix("--split-string").removeprefix("-S").lstrip("=")
    text = inline or (rest[0] if rest else None)
    if text is None:
        return None
    try:
        words: Words = list(shlex.split(text))
    except ValueError:
        return None
    return words + (rest if inline else rest[1:])


def rule_matches(rule: Rule, part: Part, *, loose: bool) -> bool:
    """Whether `rule` names `part` (a bare tool rule names every part of that tool)."""
    if isinstance(part, FilePart):
        if not rule.names(part.tool, (part.family,)):
            return False
        pattern = rule.pattern
        return pattern is None or (
            isinstance(pattern, PathPattern)
            and pattern.matches(part.target.relative, str(part.target.real))
        )
    if not rule.names(part.tool):
        return False
    if rule.pattern is None:
        return True
    if isinstance(part, CommandPart) and isinstance(rule.pattern, CommandPattern):
        pattern = rule.pattern
        return any(pattern.matches(view, loose=loose) for view in command_views(part, loose=loose))
    if isinstance(part, UrlPart) and isinstance(rule.pattern, DomainPattern):
        return rule.pattern.matches(part.host)
    return False


def full_auto_concern(part: CommandPart, scope: Scope) -> str | None:
    """Why full-auto should still ask about a command: it is a network client (the
    network is outside the workspace), or an argument plainly names a place outside the
    workspace or a protected one (`/etc/x`, `~/x`, `../x`, `.git/hooks`). A best-effort
    look: what a program does with its arguments is not visible here (docs/permissions.md)."""
    name = part.command.name
    if name is not None and os.path.basename(name.text) in NETWORK_CLIENTS:
        return f"`{name.text}` reaches the network"
    for word in part.command.argv[1:]:
        raw = expand_tilde(word)
        if raw is None:
            continue
        candidate = raw.split("=", 1)[1] if raw.startswith("-") and "=" in raw else raw
        if _names_outside(candidate, part, scope):
            return f"`{candidate}` may be outside the workspace"
    return None


def _names_outside(text: str, part: CommandPart, scope: Scope) -> bool:
    if not text or text in _NULL_SINKS or "://" in text:
        return False
    pieces = text.split("/")
    if any(piece.casefold() in PROTECTED_DIRS for piece in pieces):
        return True
    if not (text.startswith("/") or ".." in pieces):
        return False
    if part.changes_directory and not text.startswith("/"):
        return True
    return not is_inside(real_path(part.cwd, text), scope.roots)
