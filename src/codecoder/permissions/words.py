"""Shell words, and the wrappers that run the command their later words name.

`env`, `sudo`, `nohup`, `timeout 5`, `xargs` … run another command. The deny rules
(matching.py) and the parser's own questions (shell.py: is this `sh -c SCRIPT` or
`eval`, is the command name known, does it change directory) must all see through them:
`env bash -c 'rm -rf x'` runs `rm`. One table and one unwrapping serve all of them, so
they cannot drift apart.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

MAX_WRAPPERS = 40
"""More wrappers in a row than this and we stop unwrapping and ask."""


class Word(msgspec.Struct, frozen=True):
    """One shell word: its literal value, or its source text when `expands` is set."""

    text: str
    expands: bool = False


class _Wrapper(NamedTuple):
    takes_value: frozenset[str]
    """Options whose value is the next word (`-u root`)."""
    positionals: int
    """Words of its own before the command (`timeout 5 cmd`: 1)."""
    chdir: frozenset[str] = frozenset()
    """Options that run the command in another folder (`env -C dir`)."""


WRAPPERS: dict[str, _Wrapper] = {
    "env": _Wrapper(frozenset({"-u", "--unset", "-C", "--chdir"}), 0, frozenset({"-C", "--chdir"})),
    "sudo": _Wrapper(
        frozenset(
            {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}
            | {"--user", "--group", "--host", "--prompt", "--close-from", "--chdir"}
            | {"--role", "--type", "--other-user", "--command-timeout"}
        ),
        0,
        frozenset({"-D", "--chdir"}),
    ),
    "doas": _Wrapper(frozenset({"-u", "-C"}), 0),
    "command": _Wrapper(frozenset(), 0),
    "builtin": _Wrapper(frozenset(), 0),
    "busybox": _Wrapper(frozenset(), 0),
    "exec": _Wrapper(frozenset({"-a"}), 0),
    "nohup": _Wrapper(frozenset(), 0),
    "time": _Wrapper(frozenset(), 0),
    "nice": _Wrapper(frozenset({"-n", "--adjustment"}), 0),
    "ionice": _Wrapper(frozenset({"-c", "-n", "--class", "--classdata"}), 0),
    "timeout": _Wrapper(frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": _Wrapper(frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "setsid": _Wrapper(frozenset(), 0),
    "unbuffer": _Wrapper(frozenset(), 0),
    "taskset": _Wrapper(frozenset(), 1),
    "chrt": _Wrapper(frozenset(), 1),
    "watch": _Wrapper(frozenset({"-n", "--interval"}), 0),
    "xargs": _Wrapper(  # -i, -l, -e take an optional value, attached only
        frozenset({"-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a"})
        | {"--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter"}
        | {"--eof", "--arg-file", "--process-slot-var"},
        0,
    ),
}


class Unwrapped(NamedTuple):
    """A command seen through its wrappers."""

    views: tuple[tuple[Word, ...], ...]
    """argv, then in turn what each wrapper runs (`sudo env rm x`: three views)."""
    certain: bool
    """False when a wrapper's own word is only known at run time (`timeout $T cmd`: `$T`
    may split into several words), so what it runs is a guess."""
    chdir: bool
    """A wrapper runs the command in another folder (`env -C dir`, `sudo -D dir`)."""

    @property
    def argv(self) -> tuple[Word, ...]:
        """What finally runs, with every wrapper stripped."""
        return self.views[-1]

    @property
    def name(self) -> str | None:
        """The final command's name without its folder; None when only known at run time."""
        argv = self.views[-1]
        if not argv or argv[0].expands:
            return None
        return os.path.basename(argv[0].text)


class _Step(NamedTuple):
    argv: tuple[Word, ...]
    certain: bool
    chdir: bool


def unwrap(argv: Sequence[Word]) -> Unwrapped:
    views = [tuple(argv)]
    certain, chdir = True, False
    for _ in range(MAX_WRAPPERS):
        step = _unwrap_one(views[-1])
        if step is None:
            return Unwrapped(tuple(views), certain, chdir)
        views.append(step.argv)
        certain, chdir = certain and step.certain, chdir or step.chdir
    return Unwrapped(tuple(views), False, chdir)


def _unwrap_one(argv: tuple[Word, ...]) -> _Step | None:
    """What the leading wrapper of `argv` runs, or None when `argv` is not wrapped."""
    if not argv or argv[0].expands:
        return None
    name = os.path.basename(argv[0].text)
    spec = WRAPPERS.get(name)
    if spec is None:
        return None
    rest = argv[1:]
    index, certain, chdir = 0, True, False
    while index < len(rest) and not rest[index].expands:
        text = rest[index].text
        if text == "--":
            index += 1
            break
        inline = _split_option(text) if name == "env" else None
        if inline is not None:
            return _split_string(inline, rest[index + 1 :], chdir)
        if not (text.startswith("-") or (name == "env" and "=" in text)):
            break
        width, moves = _option(text, spec)
        chdir = chdir or moves
        if width == 2 and index + 1 < len(rest):
            certain = certain and not rest[index + 1].expands
        index += width
    tail = rest[index:]
    certain = certain and not any(word.expands for word in tail[: spec.positionals])
    tail = tail[spec.positionals :]
    return _Step(tail, certain, chdir) if tail else None


def _option(text: str, spec: _Wrapper) -> tuple[int, bool]:
    """How many words the option `text` spans (2 when its value is the next word), and
    whether it changes the folder the command runs in. Short options may be clustered
    (`-iu NAME`, `-uNAME`); long ones abbreviated (`--unset` as `--uns`)."""
    if text.startswith("--"):
        option = text.split("=", 1)[0]
        names = [name for name in spec.takes_value if name.startswith("--")]
        full = next((name for name in names if name.startswith(option) and len(option) > 2), None)
        moves = full is not None and full in spec.chdir
        return (2 if full is not None and "=" not in text else 1), moves
    for offset, letter in enumerate(text[1:], start=1):
        option = f"-{letter}"
        if option in spec.takes_value:
            return (1 if offset < len(text) - 1 else 2), option in spec.chdir
    return 1, False


def _split_option(text: str) -> str | None:
    """For env's `-S STRING` (also `-vS`, `-SSTRING`, `--split-string=STRING`, `--sp`):
    the string when attached to the option, "" when it is the next word; None for
    another option."""
    if text.startswith("--"):
        option, _, value = text.partition("=")
        return value if len(option) > 2 and "--split-string".startswith(option) else None
    for offset, letter in enumerate(text[1:], start=1):
        if letter == "S":
            return text[offset + 1 :]
        if f"-{letter}" in WRAPPERS["env"].takes_value:
            return None
    return None


def _split_string(inline: str, rest: tuple[Word, ...], chdir: bool) -> _Step | None:
    """`env -S 'cmd args'`: the string is split into the command's words. env does its
    own `${VAR}` expansion and backslash escapes (`\\_` is a space), so a string with
    `$` or a backslash is only known at run time."""
    if not inline and not rest:
        return None
    text = Word(inline) if inline else rest[0]
    after = rest if inline else rest[1:]
    if text.expands or "\\" in text.text:
        return _Step((Word(text.text, expands=True), *after), False, chdir)
    try:
        words = [Word(word, expands="$" in word) for word in shlex.split(text.text)]
    except ValueError:
        return _Step((Word(text.text, expands=True), *after), False, chdir)
    return _Step((*words, *after), True, chdir) if words or after else None
