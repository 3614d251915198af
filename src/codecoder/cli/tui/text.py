"""Small text helpers for the terminal: outside text on one line, display widths, SGR
styles that honour NO_COLOR (bold, dim, italic and underline stay; colours go). Outside
text is made safe by `codecoder.terminal_text.visible`, the one place every face uses."""

from __future__ import annotations

import re
from functools import lru_cache

from codecoder.terminal_text import visible

RESET = "\x1b[0m"
MARK = "\u203a"
"""The prompt's mark (a right angle quote), also before the user's messages in the transcript."""

STYLES = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "strike": "9",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "grey": "90",
}


def safe_line(text: str) -> str:
    """Outside text as one line of a preview: newlines and tabs as spaces (a multi-line
    command still reads as one), everything else as `visible` shows it."""
    return visible(text).replace("\n", " ").replace("\t", " ")


_COLOURS = re.compile(r"\x1b\[[0-9;:]*m")
"""SGR sequences only (colours, bold, reset): every other sequence stays, and `visible`
shows it as text."""


def without_colours(text: str) -> str:
    """A command's output without its colour codes. Test runners and compilers colour
    what they print; shown through `visible` each code would read `^[[31m` around every
    word. Dropping them is safe (SGR only changes how text looks), keeps our own dim
    style over the output, and leaves any other escape sequence to be shown as text."""
    return _COLOURS.sub("", text) if "\x1b" in text else text


def width_of(text: str) -> int:
    """Terminal cells `text` takes (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    from wcwidth import wcswidth

    cells = wcswidth(text)
    return cells if cells >= 0 else len(text)


def _is_colour(code: str) -> bool:
    return code[:1] in ("3", "4", "9") and code not in ("3", "4", "9")


@lru_cache(maxsize=256)
def sgr(codes: tuple[str, ...], color: bool) -> str:
    """The escape that sets exactly `codes` (after a reset)."""
    kept = [c for c in codes if color or not _is_colour(c)]
    return f"\x1b[0;{';'.join(kept)}m" if kept else RESET


def styled(text: str, *names: str, color: bool = True) -> str:
    """`text` (already safe) in the named styles, then reset."""
    if not names:
        return text
    codes = tuple(STYLES[name] for name in names)
    start = sgr(codes, color)
    return text if start == RESET else f"{start}{text}{RESET}"


def cut(text: str, cells: int) -> str:
    """`text` cut to `cells` columns, with … when something was cut."""
    if width_of(text) <= cells:
        return text
    if cells <= 1:
        return "…"[:cells]
    out: list[str] = []
    used = 0
    for char in text:
        w = width_of(char)
        if used + w > cells - 1:
            break
        out.append(char)
        used += w
    return "".join(out) + "…"


_SGR = re.compile(r"\x1b\[([0-9;]*)m")
_ANSI_NAMES = (
    "black",
    "red",
    "green",
    "yellow",
    "blue",
    "magenta",
    "cyan",
    "gray",
)
_FLAGS = {"1": "bold", "2": "dim", "3": "italic", "4": "underline", "9": "strike"}
_OFF = {"22": ("bold", "dim"), "23": ("italic",), "24": ("underline",), "29": ("strike",)}


def _colour(code: int) -> str:
    if 30 <= code <= 37:
        return f"fg:ansi{_ANSI_NAMES[code - 30]}" if code != 37 else "fg:ansiwhite"
    name = _ANSI_NAMES[code - 90]
    return "fg:ansibright" + name if name != "gray" else "fg:ansiwhite"


def fragments(text: str) -> list[tuple[str, str]]:
    """ANSI text (our SGR styles) as prompt_toolkit (style, text) fragments, one per run
    of a style: prompt_toolkit's own ANSI parser makes one per character, and its
    layout then splits them again at every redraw."""
    out: list[tuple[str, str]] = []
    flags: dict[str, bool] = {}
    colour = ""
    style = ""
    position = 0
    for match in _SGR.finditer(text):
        if match.start() > position:
            out.append((style, text[position : match.start()]))
        position = match.end()
        codes = match.group(1).split(";") if match.group(1) else ["0"]
        index = 0
        while index < len(codes):
            code = codes[index]
            if code in ("0", ""):
                flags, colour = {}, ""
            elif code in _FLAGS:
                flags[_FLAGS[code]] = True
            elif code in _OFF:
                for name in _OFF[code]:
                    flags.pop(name, None)
            elif code == "39":
                colour = ""
            elif code == "38" and index + 2 < len(codes) and codes[index + 1] == "5":
                number = int(codes[index + 2] or 0)
                colour = _colour(30 + number if number < 8 else 82 + number) if number < 16 else ""
                index += 2
            elif code == "38" and index + 4 < len(codes) and codes[index + 1] == "2":
                r, g, b = (int(c or 0) for c in codes[index + 2 : index + 5])
                colour = f"fg:#{r:02x}{g:02x}{b:02x}"
                index += 4
            elif code.isdigit() and (30 <= int(code) <= 37 or 90 <= int(code) <= 97):
                colour = _colour(int(code))
            index += 1
        style = " ".join([*flags, colour]).strip()
    if position < len(text):
        out.append((style, text[position:]))
    return out
