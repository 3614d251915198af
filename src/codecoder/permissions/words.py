"""Shell words as the permission check sees them, and how a program's words are read.

What programs do with their words is in wrappers.py (programs that run the command
their later words name), programs.py (commands, shell code and writes other programs
carry) and readonly.py (the built-in read-only list); where bash evaluates a word as
code is in evaluation.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import msgspec


class Word(msgspec.Struct, frozen=True):
    """One shell word: its literal value, or its source text when `expands` is set."""

    text: str
    expands: bool = False


def program_name(argv: Sequence[Word]) -> str | None:
    """The command's name without its folder; None when only known at run time."""
    if not argv or argv[0].expands:
        return None
    return os.path.basename(argv[0].text)


def operand_words(args: Sequence[Word], takes_value: frozenset[str]) -> list[Word]:
    """The words that are not options or option values (after `--`, all of them)."""
    found: list[Word] = []
    index = 0
    while index < len(args):
        text = args[index].text
        if text == "--":
            found.extend(args[index + 1 :])
            break
        if text.startswith("-") and len(text) > 1 and not args[index].expands:
            index += 2 if text in takes_value else 1
            continue
        found.append(args[index])
        index += 1
    return found


def has_option(args: Sequence[Word], short: str, long: Sequence[str] = ()) -> bool:
    """Whether one of the short option letters in `short` (also clustered: `-nE`) or
    one of the `long` options is given."""
    for word in args:
        text = word.text
        if text == "--":
            return False
        if any(text == option or text.startswith(option + "=") for option in long):
            return True
        if text.startswith("-") and not text.startswith("--") and any(c in text[1:] for c in short):
            return True
    return False


# find --------------------------------------------------------------------------------------


def excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
