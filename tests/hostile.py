"""Text from outside that tries to act on the terminal it reaches, and the check that a
face showed it instead: the same strings go through every face (tests/cli/
test_outside_text.py, tests/test_terminal_text.py)."""

from __future__ import annotations

import re

PAYLOADS = (
    "\x1b]52;c;cm0gLXJmIH4K\x07",  # OSC 52: the clipboard becomes "rm -rf ~⏎"
    "\x1b]0;pwned\x07",  # OSC 0: the window title
    "\x1b]2;pwned\x1b\\",  # OSC 2, ended by ST in its ESC form
    "\x1b[1A\x1b[2K",  # CSI: up a line and erase it
    "\x9b2J",  # 8-bit CSI: clear the screen
    "\x9d0;pwned\x9c",  # 8-bit OSC, ended by the 8-bit ST
    "\x90+q544e\x9c",  # 8-bit DCS
    "\x07",  # BEL
    "rm -rf /\x08\x08\x08\x08\x08\x08\x08\x08ls -l",  # backspaces write over it
    "safe\rEVIL",  # a carriage return writes over the line
    "\u202eevil\u202c",  # RLO … PDF: the line reads reversed ("Trojan Source")
    "\u2067hidden\u2069",  # RLI … PDI
)
HOSTILE = " ".join(PAYLOADS)
"""Every payload on one line (no newline: a face may cut its text at one)."""

SHOWN = (
    "^[]52;c;cm0gLXJmIH4K^G",
    "^[]0;pwned^G",
    "^[]2;pwned^[\\",
    "^[[1A^[[2K",
    "<U+009B>2J",
    "<U+009D>0;pwned<U+009C>",
    "<U+0090>+q544e<U+009C>",
    "rm -rf /^H^H^H^H^H^H^H^Hls -l",
    "safe^MEVIL",
    "<U+202E>evil<U+202C>",
    "<U+2067>hidden<U+2069>",
)
"""How each payload reads once shown (BEL's `^G` is in the first two)."""

OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]")
"""What a terminal acts on rather than shows, and the line breaks it does not make
(U+2028, U+2029) that other readers do; tab and newline are the face's own."""
_OWN_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def obeyed(text: str, *, own_colours: bool = False) -> list[str]:
    """The characters of `text` a terminal would act on (after taking out the SGR
    colours the face adds itself, when it does)."""
    if own_colours:
        text = _OWN_COLOURS.sub("", text)
    return OBEYED.findall(text)


def assert_shown(text: str, shown: tuple[str, ...] = SHOWN, *, own_colours: bool = False) -> None:
    """Nothing in `text` is obeyed, and each of `shown` (what the face kept of the
    payloads) is there as text."""
    assert obeyed(text, own_colours=own_colours) == [], text
    missing = [piece for piece in shown if piece not in text]
    assert not missing, f"not shown: {missing!r} in {text!r}"
