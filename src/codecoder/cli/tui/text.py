"""Small text helpers for the terminal: untrusted text made safe, display widths, SGR
styles that honour NO_COLOR (bold, dim, italic and underline stay; colours go)."""

from __future__ import annotations

from collections.abc import Iterable

RESET = "\x1b[0m"
MARK = "\u203a"
"""The prompt's mark (a right angle quote), also before the user's messages in the transcript."""
_CONTROLS = {c: f"^{chr(c + 64)}" for c in (*range(0x09), *range(0x0B, 0x20))} | {0x7F: "^?"}
"""C0 controls but tab and newline, and DEL, in caret notation: an escape sequence from
the model, a command or a file is shown, never obeyed (it could move the cursor or hide
what is about to be approved)."""

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


def safe(text: str) -> str:
    return text.translate(_CONTROLS)


def safe_line(text: str) -> str:
    """One line: newlines and tabs shown as spaces too."""
    return safe(text).replace("\n", " ").replace("\t", " ")


def width_of(text: str) -> int:
    """Terminal cells `text` takes (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    from wcwidth import wcswidth

    cells = wcswidth(text)
    return cells if cells >= 0 else len(text)


def _is_colour(code: str) -> bool:
    return code[:1] in ("3", "4", "9") and code not in ("3", "4", "9")


def sgr(codes: Iterable[str], color: bool) -> str:
    """The escape that sets exactly `codes` (after a reset)."""
    kept = [c for c in codes if color or not _is_colour(c)]
    return f"\x1b[0;{';'.join(kept)}m" if kept else RESET


def styled(text: str, *names: str, color: bool = True) -> str:
    """`text` (already safe) in the named styles, then reset."""
    if not names:
        return text
    codes = [STYLES[name] for name in names]
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
