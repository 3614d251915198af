"""Where bash evaluates a quoted word as code: arithmetic, subscripts and names.

Bash evaluates arithmetic in `(( ))`, `$(( ))`, `$[ ]`, `let`, C-style `for`, the
operators `-eq`, `-lt` … of `[[ ]]`, array subscripts and `${x:offset:length}`; and it
resolves a *name* given to `[[ -v ]]`, `test -v`, `declare`, `unset`, `printf -v`,
`read`, `wait -p`, `getopts` … In both places `a[SUBSCRIPT]` expands SUBSCRIPT, so
`[[ -v 'a[$(id)]' ]]` runs `id` although a parser sees a quoted string with nothing to
run. A variable named in arithmetic has its *value* evaluated the same way, so
`x='a[$(id)]'; (( x ))` runs it as well (each case checked against bash 5.2; the list is
in tests/permissions/test_evaluation.py).

So a word in such a place is never "nothing to check": a name must be a plain
identifier (with at most a numeric subscript), and an arithmetic expression may hold
only numbers, operators and variables whose values are numbers. A variable counts as a
number when the line gives it nothing but integer literals (or values computed by
arithmetic), and it comes neither from the environment nor from bash itself (bash's
own variables are upper case, or `_`). Anything else is a problem: asked about, never
allowed.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from codecoder.permissions.words import Word

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[([0-9]+|@|\*)\])?")
_NUMBER = re.compile(r"0[xX][0-9A-Fa-f]+|[0-9]+#[0-9A-Za-z@_]+|[0-9]+")
_INTEGER = re.compile(r"[-+]?(0[xX][0-9A-Fa-f]+|[0-9]+)")
_ARITHMETIC_VALUE = re.compile(r'"?\$(\(\(.*\)\)|\[.*\])"?', re.DOTALL)
"""`$((…))` as a whole value: a number (its expression is checked where it stands)."""
_OPERATORS = frozenset("+-*/%<>=!&|^~?:,() \t\n")
_NUMERIC_PARAMETERS = re.compile(r"\$(?:[$!?#]|\{[$!?#]\}|\{#[A-Za-z_][A-Za-z0-9_]*\})")
"""`$$`, `$!`, `$?`, `$#`, `${#VAR}`: always numbers."""
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(.*?)\])?(\+?=)(.*)", re.DOTALL)
_COMPOUND_SUBSCRIPT = re.compile(r"\[(.*?)\]\+?=", re.DOTALL)
_EXPANSION = re.compile(
    r"\$\{(?P<prefix>[#!]?)(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])"
    r"(?:\[(?P<sub>[^\]]*)\])?(?P<rest>.*)\}",
    re.DOTALL,
)
_SUBSTRING = re.compile(r":(?![-=?+])")
INTEGER_SPECIALS = frozenset(
    {"RANDOM", "SRANDOM", "OPTIND", "HISTCMD", "LINENO", "SECONDS", "OPTERR"}
)
"""Bash's own integer variables: a value assigned to one is evaluated as arithmetic
(`RANDOM='a[$(id)]'` runs `id`)."""
INTEGER_FLAGS = frozenset("in")
"""`declare -i` makes every later value arithmetic; `declare -n` makes a name a
reference to whatever its value names."""


class Arithmetic(NamedTuple):
    """The variables an arithmetic expression reads, or why it cannot be checked."""

    names: frozenset[str]
    problem: str | None = None


def arithmetic(text: str) -> Arithmetic:
    """Bash removes quotes and expands `$VAR` before it evaluates, so those are read
    through; a substitution, a subscript or anything else is a problem."""
    text = text.replace('"', "").replace("'", "")
    text = _NUMERIC_PARAMETERS.sub("0", text)
    text = _VARIABLE.sub(lambda found: found.group(1) or found.group(2), text)
    names: set[str] = set()
    index = 0
    while index < len(text):
        if text[index] in _OPERATORS:
            index += 1
            continue
        found = _NUMBER.match(text, index) or _NAME.match(text, index)
        if found is None:
            what = "a subscript" if text[index] == "[" else f"`{text[index]}`"
            return Arithmetic(frozenset(), f"it holds {what}, which bash evaluates")
        if found.re is _NAME:
            names.add(found.group())
        index = found.end()
    return Arithmetic(frozenset(names))


def name_problem(word: Word, where: str) -> str | None:
    """Why `word`, given where bash expects a variable name, cannot be checked."""
    if word.expands:
        return f"{where} a name only known at run time (`{_short(word.text)}`)"
    if not _PLAIN_NAME.fullmatch(word.text):
        return f"{where} `{_short(word.text)}`, whose subscript bash evaluates"
    return None


class Assignment(NamedTuple):
    """`NAME[SUBSCRIPT]=VALUE` (or `+=`) as a word holds it."""

    name: str
    subscript: str | None
    value: str
    literal: bool
    """The value is known (no expansion in the word)."""

    @property
    def numeric(self) -> bool:
        if not self.literal:
            return _ARITHMETIC_VALUE.fullmatch(self.value) is not None
        return self.value == "" or _INTEGER.fullmatch(self.value) is not None

    @property
    def compound(self) -> bool:
        """`a=(…)`: an array whose element subscripts bash evaluates."""
        return self.value.startswith("(")

    def subscripts(self) -> list[str]:
        found = [] if self.subscript is None else [self.subscript]
        if self.compound:
            found += _COMPOUND_SUBSCRIPT.findall(self.value)
        return found


def assignment(word: Word) -> Assignment | None:
    """The assignment a `NAME=value` word makes; None for another word."""
    found = _ASSIGNMENT.fullmatch(word.text)
    if found is None:
        return None
    name, subscript, _, value = found.groups()
    return Assignment(name, subscript, value, literal=not word.expands)


class Expansion(NamedTuple):
    """What a `${…}` expansion makes bash evaluate."""

    arithmetic: tuple[str, ...] = ()
    assigns: str | None = None
    """`${x:=…}` / `${x=…}` assign x."""
    problem: str | None = None


def expansion(text: str) -> Expansion:
    found = _EXPANSION.fullmatch(text)
    if found is None:
        return Expansion(problem=f"cannot read the expansion `{_short(text)}`")
    prefix, name, sub, rest = found.group("prefix", "name", "sub", "rest")
    if prefix == "!" and not (rest in ("*", "@") or (sub in ("@", "*") and not rest)):
        return Expansion(problem=f"`{_short(text)}` takes a variable's name from its value")
    if rest.startswith("@P"):
        return Expansion(problem=f"`{_short(text)}` runs the prompt expansions in a value")
    texts = [sub] if sub is not None and sub not in ("@", "*") else []
    if rest.startswith(":") and _SUBSTRING.match(rest):
        texts += _top_level_split(rest[1:])
    assigns = name if rest.startswith((":=", "=")) else None
    return Expansion(tuple(texts), assigns)


def _top_level_split(text: str) -> list[str]:
    """`offset:length` split at its colon (not one inside a `?:` of parentheses)."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ":" and depth == 0 and "?" not in text[:index]:
            return [text[:index], text[index + 1 :]]
    return [text]


def numeric(name: str, tainted: set[str] | frozenset[str]) -> bool:
    """Whether the variable `name` can only hold a number when the line runs."""
    return (
        name != "_"
        and any(char.islower() for char in name)
        and name not in os.environ
        and name not in tainted
    )


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
