"""Does a rule name a part?

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
from collections.abc import Sequence

from codecoder.permissions.calls import CommandPart, FilePart, Part, UrlPart
from codecoder.permissions.rules import CommandPattern, DomainPattern, PathPattern, Rule
from codecoder.permissions.words import Word, unwrap

Words = list[str | None]


def values(words: Sequence[Word]) -> Words:
    return [None if word.expands else word.text for word in words]


def command_views(part: CommandPart, *, loose: bool) -> list[Words]:
    """The forms of a command a rule is compared with."""
    exact = values(part.command.words)
    if not loose:
        return [exact]
    views = [exact, *(values(view) for view in unwrap(part.command.argv).views)]
    return views + [_basename(view) for view in views]


def _basename(words: Words) -> Words:
    if not words or words[0] is None:
        return words
    return [os.path.basename(words[0]), *words[1:]]


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
