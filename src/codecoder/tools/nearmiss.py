"""edit_file's near misses: an `old_text` that is the file's text but for whitespace.

Models copy a block and lose its indentation (often only the first line's, when they
start copying after it), or keep trailing spaces the file does not have. Refusing that
costs a round trip and often a second miss. So when the lines match once with trailing
whitespace ignored, or once with indentation ignored and a constant difference of
indentation between the two, the edit applies to those lines, `new_text` shifted by the
same difference, and the result says so. The lines `new_text` keeps unchanged from
`old_text` are written as the file has them (a Markdown line's two trailing spaces are a
line break: a context line must not lose them). Anything less certain (two such places,
mixed tabs and spaces) is refused with the closest lines of the file and their numbers, so
the next attempt can copy them.

Lines are split on \\n only, as read_file and the exact match count them: str.splitlines
also splits on \\f, \\v, U+2028 and others, which would put every number after such a
character off by one.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Literal, NamedTuple

How = Literal["trailing whitespace", "indentation"]
"""How an old_text differed from the file's lines it was matched to."""

SHOWN_LINES = 12
"""Lines of the file shown around the closest match of an old_text not found."""
MAX_PROBES = 5
"""Lines of old_text looked for, in order, when finding the closest place."""


class Loose(NamedTuple):
    """A match made after normalising whitespace: the new file text, the first line
    (1-based) of the replaced lines, how the two differed, and the exact text of the
    file's lines that matched (`old`, whole lines) with what replaces them (`new`)."""

    text: str
    line: int
    how: How
    old: str
    new: str


class Ambiguous(Exception):
    """The text matches more than once after normalising; `lines` are where (1-based)."""

    def __init__(self, lines: list[int]) -> None:
        super().__init__(lines)
        self.lines = lines


def _trailing(line: str) -> str:
    return line.rstrip()


def _stripped(line: str) -> str:
    return line.strip()


def loose_match(text: str, old: str, new: str) -> Loose | None:
    """The file `text` with `old` replaced by `new` where they match but for whitespace,
    None when they do not match so (or the shift of indentation is not constant);
    Ambiguous when they match in several places."""
    if not old.strip():
        return None
    lines = file_lines(text)
    wanted = _as_lines(old)
    given = _as_lines(new)
    modes: tuple[tuple[Callable[[str], str], How], ...] = (
        (_trailing, "trailing whitespace"),
        (_stripped, "indentation"),
    )
    for key, how in modes:
        starts = _windows(lines, wanted, key)
        if len(starts) > 1:
            raise Ambiguous([start + 1 for start in starts])
        if starts:
            window = lines[starts[0] : starts[0] + len(wanted)]
            replacement = given if key is _trailing else _shifted(window, wanted, given)
            if replacement is None:
                return None
            body = _joined(_kept(replacement, wanted, given, window), window)
            start = starts[0]
            updated = "".join(lines[:start]) + body + "".join(lines[start + len(wanted) :])
            return Loose(updated, start + 1, how, "".join(window), body)
    return None


def file_lines(text: str) -> list[str]:
    """The file's lines with their line ends, split on \\n only (read_file's lines)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _as_lines(text: str) -> list[str]:
    parts = text.split("\n")
    if text.endswith("\n"):
        parts.pop()
    return [part.removesuffix("\r") for part in parts]


def _windows(lines: list[str], wanted: list[str], key: Callable[[str], str]) -> list[int]:
    keys = [key(line) for line in lines]
    wanted_keys = [key(line) for line in wanted]
    span = len(wanted_keys)
    return [
        start
        for start in range(len(keys) - span + 1)
        if keys[start] == wanted_keys[0] and keys[start : start + span] == wanted_keys
    ]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _shifted(window: list[str], old: list[str], new: list[str]) -> list[str] | None:
    """`new` given the indentation the file has where `old` lacks it (or without what
    `old` has extra); None when the difference is not the same on every line. A first
    line of `old` with no indentation at all is let off: models start copying after it."""
    pairs = [
        (_indent(have), _indent(want))
        for n, (have, want) in enumerate(zip(window, old, strict=True))
        if want.strip() and not (n == 0 and not _indent(want))
    ]
    adds = {have[: len(have) - len(want)] for have, want in pairs if have.endswith(want)}
    drops = {want[: len(want) - len(have)] for have, want in pairs if want.endswith(have)}
    out = list(new)
    if not pairs:
        extra, removed = "", ""
    elif len(adds) == 1 and all(have.endswith(want) for have, want in pairs):
        extra, removed = adds.pop(), ""
    elif len(drops) == 1 and all(want.endswith(have) for have, want in pairs):
        extra, removed = "", drops.pop()
    else:
        return None
    for n, line in enumerate(out):
        if not line.strip():
            continue
        if n == 0 and not _indent(old[0]) and not _indent(line):
            out[n] = _indent(window[0]) + line
        elif removed and line.startswith(removed):
            out[n] = line[len(removed) :]
        else:
            out[n] = extra + line
    return out


def _kept(replacement: list[str], old: list[str], new: list[str], window: list[str]) -> list[str]:
    """`replacement` with each line that `new` keeps unchanged from `old` as the file has
    it: only the lines the edit changes take new_text's whitespace (or its shift)."""
    out = list(replacement)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            out[block.b + k] = _content(window[block.a + k])
    return out


def _content(line: str) -> str:
    return line.removesuffix("\n").removesuffix("\r")


def _joined(replacement: list[str], window: list[str]) -> str:
    """The replaced lines with the file's line end, the last one keeping the end the
    window's last line had."""
    if not replacement:
        return ""
    newline = "\r\n" if window[0].endswith("\r\n") else "\n"
    last = window[-1]
    end = last[len(last.rstrip("\r\n")) :]
    return newline.join(replacement) + end


def closest(text: str, old: str) -> str | None:
    """The file's lines most like `old`'s, numbered like read_file's output, or None
    when no line of the file is much like any of its first lines."""
    lines = [_content(line) for line in file_lines(text)]
    stripped = [line.strip() for line in lines]
    probes = [line.strip() for line in _as_lines(old) if line.strip()][:MAX_PROBES]
    for offset, probe in enumerate(probes):
        found = difflib.get_close_matches(probe, stripped, n=1, cutoff=0.6)
        if found:
            first = max(stripped.index(found[0]) - offset, 0)
            count = min(max(len(_as_lines(old)), 1), SHOWN_LINES)
            shown = lines[first : first + count]
            return "\n".join(f"{first + n + 1:>6}\t{line}" for n, line in enumerate(shown))
    return None
