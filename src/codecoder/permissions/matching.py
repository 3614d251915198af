"""Does a rule name a part?

Allow rules match a command exactly as bash will run it (every word literal, prefix
assignments included), so that `run_command(git status)` never covers `PATH=x git
status` or `git status $X`. Deny and ask rules are read loosely, since missing one is
the costly mistake: they are also tried on the command with its `NAME=value` prefix and
wrappers (`env`, `sudo`, `nohup`, `timeout 5`, `xargs` …) stripped and with the command
name's folder dropped (`/bin/rm` is `rm`), and a word only known at run time matches
anything. A command from a best-effort split of an unreadable line (`guessed`) is only
read by them, and every one of its words is tried as the start of a command.

A command that another carries (`rm x` in `sudo rm x`) is allowed by its own rule, or by
a rule that covers its carrier up to and past what it carries: an exact rule for the
whole line, or a prefix rule longer than the carrier's own words (`sudo rm:*`). A prefix
rule that stops before (`sudo:*`) authorises the carrier, not what it carries.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from codecoder.permissions.calls import CommandPart, FilePart, Part, UrlPart
from codecoder.permissions.programs import git_parts
from codecoder.permissions.rules import (
    COMMAND_TOOL,
    CommandPattern,
    DomainPattern,
    PathPattern,
    Rule,
)
from codecoder.permissions.shell import SimpleCommand
from codecoder.permissions.words import Word, program_name
from codecoder.permissions.wrappers import WRAPPERS, unwrap

Words = list[str | None]


def values(words: Sequence[Word]) -> Words:
    return [None if word.expands else word.text for word in words]


def command_views(part: CommandPart, *, loose: bool) -> list[Words]:
    """The forms of a command a rule is compared with. Loosely also: behind its
    wrappers, git without its global options (`git -C . push` is `git push`), and under
    a wrapper every later word as the start of a command, so that an option the wrapper
    table does not know (`setpriv --pdeathsig KILL rm x`) cannot hide what it runs."""
    exact = values(part.command.words)
    if not loose:
        return [exact]
    unwrapped = unwrap(part.command.argv)
    views = [exact, *(values(view) for view in unwrapped.views)]
    views += [_without_git_options(view) for view in views]
    if len(unwrapped.views) > 1 or program_name(part.command.argv) in WRAPPERS:
        argv = values(part.command.argv)
        views += [argv[start:] for start in range(1, len(argv))]
    return views + [_basename(view) for view in views]


def _without_git_options(words: Words) -> Words:
    if not words or words[0] is None or os.path.basename(words[0]) != "git":
        return words
    options, sub, args = git_parts([Word(w or "", expands=w is None) for w in words])
    if sub is None or not options:
        return words
    return [words[0], *values([sub, *args])]


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
        if part.command.guessed:
            words = values(part.command.argv)
            return loose and any(
                pattern.matches(words[start:], loose=True) for start in range(len(words))
            )
        return any(pattern.matches(view, loose=loose) for view in command_views(part, loose=loose))
    if isinstance(part, UrlPart) and isinstance(rule.pattern, DomainPattern):
        return rule.pattern.matches(part.host)
    return False


def covers_carried(rule: Rule, command: SimpleCommand) -> bool:
    """Whether an allow rule covers what `command` carries (see the module's docstring)."""
    pattern = rule.pattern
    if rule.tool != COMMAND_TOOL or not isinstance(pattern, CommandPattern):
        return False
    if command.guessed or not pattern.matches(values(command.words), loose=False):
        return False
    start = command.carried_from
    return (
        not pattern.prefix or start is None or len(pattern.words) > start + len(command.assignments)
    )


def carriers(command: SimpleCommand) -> list[SimpleCommand]:
    """The commands that carry `command`, innermost first."""
    found: list[SimpleCommand] = []
    carrier = command.carrier
    while carrier is not None:
        found.append(carrier)
        carrier = carrier.carrier
    return found
