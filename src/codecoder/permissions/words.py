"""Shell words as the permission check sees them, and how a program's words are read.

What programs do with their words is in wrappers.py (programs that run the command
their later words name), programs.py (commands, shell code and writes other programs
carry) and readonly.py (the built-in read-only list); where bash evaluates a word as
code is in evaluation.py.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

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


def operand_words(args: Sequence[Word], takes_value: Collection[str] = ()) -> list[Word]:
    """The words that are not options or option values (after `--`, all of them).
    `takes_value`: the options whose value is the next word (long ones also abbreviated)."""
    found: list[Word] = []
    index = 0
    while index < len(args):
        text = args[index].text
        if text == "--":
            found.extend(args[index + 1 :])
            break
        if text.startswith("-") and len(text) > 1 and not args[index].expands:
            following = args[index + 1] if index + 1 < len(args) else None
            _, value = option_with_value(text, args, index, takes_value)
            index += 2 if value is not None and value is following else 1
            continue
        found.append(args[index])
        index += 1
    return found


def long_option(text: str, option: str) -> bool:
    """Whether `text` (`--name` or `--name=value`) gives the long `option`, also
    abbreviated as GNU getopt and git accept (`--exp` for `--expression`): any prefix of
    at least one letter counts, since an ambiguous one is only refused by the program."""
    name = text.split("=", 1)[0]
    return name.startswith("--") and len(name) > 2 and option.startswith(name)


def option_with_value(
    text: str, args: Sequence[Word], index: int, names: Collection[str]
) -> tuple[str, Word | None]:
    """Which of `names` the word `args[index]` gives, and its value: `--opt=V`,
    `--opt V` (also abbreviated: `--op=V`), `-oV`, `-o V`, or in a cluster of short
    flags, `-xoV` / `-xo V` (the letters before it are taken as flags). ("", None) when
    it gives none of them."""
    following = args[index + 1] if index + 1 < len(args) else None
    if text.startswith("--"):
        option = next((n for n in names if n.startswith("--") and long_option(text, n)), None)
        if option is None:
            return "", None
        return option, Word(text.split("=", 1)[1]) if "=" in text else following
    if not text.startswith("-") or len(text) < 2:
        return "", None
    for offset, letter in enumerate(text[1:], start=1):
        option = f"-{letter}"
        if option in names:
            rest = text[offset + 1 :]
            return option, Word(rest) if rest else following
    return "", None


def has_option(args: Sequence[Word], short: str, long: Sequence[str] = ()) -> bool:
    """Whether one of the short option letters in `short` (also clustered: `-nE`) or
    one of the `long` options (also abbreviated) is given."""
    for word in args:
        text = word.text
        if text == "--":
            return False
        if text.startswith("--") and any(long_option(text, option) for option in long):
            return True
        if text.startswith("-") and not text.startswith("--") and any(c in text[1:] for c in short):
            return True
    return False


def excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
