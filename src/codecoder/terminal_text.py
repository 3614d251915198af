"""Text from outside (the model, a command's output, a file name, a server's stderr, a
task file, a stored session) made fit for a terminal: every character a terminal would
obey rather than show, or a reader would take for a line break the terminal does not
make, is shown as text. Every face writes outside strings through
`visible`; the colours CodeCoder adds itself are added after it.

What is shown, and why:

- C0 controls and DEL in caret notation (`^[`, `^G`, `^H`, `^?`): ESC starts every
  escape sequence (OSC 52 sets the clipboard, OSC 0/2 the window title, CSI moves the
  cursor and erases); BEL rings; backspace steps back over what was written.
- A carriage return as `^M`: on its own it returns to the start of the line, and what
  follows overwrites what the person was meant to read. CRLF is a line end (files and
  servers write it), so it becomes a newline where newlines are kept.
- C1 controls (U+0080 to U+009F) as `<U+009B>`: xterm and VTE act on them as on their
  ESC forms (U+009B is CSI, U+009D OSC, U+0090 DCS, U+009C ST).
- The bidi embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069) as
  `<U+202E>`: a terminal that lays out bidirectional text reorders what follows them, so
  that what a person reads is not what is there ("Trojan Source"). The marks (LRM, RLM,
  ALM) stay: right-to-left text needs them and they cannot reverse a run.
- The line and paragraph separators (U+2028, U+2029) as `<U+2028>`: a terminal does not
  break the line there (it shows nothing), but Python's `splitlines`, editors and
  JavaScript do, so a "line" that holds one reads as two lines to every such reader and
  as one to git, `diff` and the terminal: a file name or a tool's argument would forge a
  line where it reaches a prompt or a face that splits lines. NEL (U+0085) is a C1
  control and VT, FF, FS, GS and RS (the other line breaks `splitlines` knows) are C0
  ones, so every line break but LF and CRLF is shown.
- Lone surrogates (a file name's undecodable bytes, kept by `surrogateescape`) as
  U+FFFD: written out they are either an encoding error or the raw byte, and a raw 0x9B
  is CSI to a terminal in an 8-bit mode.

Tab and newline stay where a face shows several lines; in a one-line field (a task id,
a tool's arguments, a table cell, a file name in the system prompt) a newline would
forge a line of the face's own, so there every control is shown.

JSON lines (`exec --json`, `sessions export`) go to terminals too; `json_escaped` writes
the same characters as JSON's `\\u` escapes there, which leaves every value as it was
(and keeps each line one line for a reader that splits at U+2028).
"""

from __future__ import annotations

import re

_SHOWN = (
    {chr(c): f"^{chr(c + 64)}" for c in range(0x20)}
    | {"\x7f": "^?"}
    | {chr(c): f"<U+{c:04X}>" for c in (*range(0x80, 0xA0), *range(0x202A, 0x202F))}
    | {chr(c): f"<U+{c:04X}>" for c in (0x2028, 0x2029, *range(0x2066, 0x206A))}
)
_OTHERS = r"\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_JSON_RAW = rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
"""DEL, C1, the separators and the bidi controls in UTF-8: JSON escapes C0 itself, and
an encoder refuses a lone surrogate."""
_LINES = rf"\r\n|[\x00-\x08\x0b-\x1f{_OTHERS}]"
_ONE_LINE = rf"[\x00-\x1f{_OTHERS}]"
"""Patterns compiled on first use (by `re`'s own cache): every command registers faces
that import this module, and compiling both costs ~1 ms of start-up."""


def visible(text: str, *, one_line: bool = False) -> str:
    """`text` with nothing in it a terminal would obey (see the module's docstring);
    `one_line` shows tab and newline too."""
    return re.sub(_ONE_LINE if one_line else _LINES, _shown, text)


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    return _SHOWN.get(char, "\ufffd")


def json_escaped(data: bytes) -> bytes:
    """JSON text (UTF-8) with what `visible` shows written as `\\uXXXX` escapes. Outside
    its strings JSON is ASCII, so every match is inside a string."""
    return re.sub(_JSON_RAW, _json_escape, data)


def _json_escape(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode())
