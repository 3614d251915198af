"""What a sed script does besides editing the stream: the files it writes or reads and
the commands it runs.

GNU sed can run shell code (`e COMMAND`, `e` alone runs the pattern space, the `e` flag
of `s`) and open files (`w FILE`, `W FILE`, the `w` flag of `s`, `r FILE`, `R FILE`), so
an allowed `sed` can carry a command or a write in its script. This is a scanner of
sed's command syntax (addresses, the commands and their arguments), not a matcher of
letters: `s/hello/world/` mentions `e` and `w` but runs and writes nothing. A script it
cannot read is reported as such, and the caller asks about it.
"""

from __future__ import annotations

from typing import NamedTuple


class SedEffects(NamedTuple):
    """What a script does besides printing; `readable` False: it could not be scanned."""

    readable: bool = True
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    scripts: tuple[str, ...] = ()
    """Shell code it runs (`e COMMAND`)."""
    runs_input: bool = False
    """It runs text from its input as a command (`e` alone, the `e` flag of `s`)."""


class _Unreadable(Exception):
    pass


_PLAIN_COMMANDS = frozenset("=dDgGhHnNpPxzF")
_TEXT_COMMANDS = frozenset("aic")
_LABEL_COMMANDS = frozenset("btT:")
_OPTIONAL_NUMBER = frozenset("qQlL")


def sed_effects(script: str) -> SedEffects:
    try:
        return _Scanner(script).run()
    except _Unreadable:
        return SedEffects(readable=False)


class _Scanner:
    def __init__(self, script: str) -> None:
        self.text = script
        self.pos = 0
        self.writes: list[str] = []
        self.reads: list[str] = []
        self.scripts: list[str] = []
        self.runs_input = False

    def run(self) -> SedEffects:
        while self._skip(" \t\n;"):
            self._command()
        return SedEffects(
            True, tuple(self.writes), tuple(self.reads), tuple(self.scripts), self.runs_input
        )

    def _skip(self, chars: str) -> bool:
        """Skip `chars`; whether anything is left."""
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1
        return self.pos < len(self.text)

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _take(self) -> str:
        char = self._peek()
        if not char:
            raise _Unreadable
        self.pos += 1
        return char

    def _command(self) -> None:
        if self._peek() == "#":
            self._rest_of_line()
            return
        self._addresses()
        self._skip(" \t")
        if self._peek() == "!":
            self.pos += 1
            self._skip(" \t")
        name = self._take()
        if name in "{}" or name in _PLAIN_COMMANDS:
            return
        if name in _TEXT_COMMANDS:
            self._rest_of_line()
        elif name in _LABEL_COMMANDS:
            self._label()
        elif name in "rR":
            self.reads.append(self._rest_of_line().strip())
        elif name in "wW":
            self.writes.append(self._rest_of_line().strip())
        elif name == "e":
            self._exec(self._rest_of_line().strip())
        elif name in _OPTIONAL_NUMBER or name == "v":
            self._label()
        elif name == "s":
            self._substitute()
        elif name == "y":
            delimiter = self._take()
            self._delimited(delimiter)
            self._delimited(delimiter)
        else:
            raise _Unreadable

    def _exec(self, command: str) -> None:
        if command:
            self.scripts.append(command)
        else:
            self.runs_input = True

    def _addresses(self) -> None:
        if not self._address():
            return
        if self._peek() == ",":
            self.pos += 1
            if self._peek() in ("+", "~"):
                self.pos += 1
                self._digits(required=True)
            elif not self._address():
                raise _Unreadable

    def _address(self) -> bool:
        char = self._peek()
        if char.isdigit():
            self._digits(required=True)
            if self._peek() == "~":
                self.pos += 1
                self._digits(required=True)
        elif char == "$":
            self.pos += 1
        elif char in ("/", "\\"):
            self.pos += 1
            delimiter = self._take() if char == "\\" else "/"
            self._delimited(delimiter)
            while self._peek() in ("I", "M"):
                self.pos += 1
        else:
            return False
        return True

    def _digits(self, *, required: bool) -> None:
        start = self.pos
        while self._peek().isdigit():
            self.pos += 1
        if required and self.pos == start:
            raise _Unreadable

    def _delimited(self, delimiter: str) -> None:
        """Up to and past the next unescaped `delimiter`."""
        if delimiter in ("\n", "\\"):
            raise _Unreadable
        while True:
            char = self._take()
            if char == "\\":
                self._take()
            elif char == delimiter:
                return

    def _substitute(self) -> None:
        delimiter = self._take()
        self._delimited(delimiter)
        self._delimited(delimiter)
        while True:
            flag = self._peek()
            if flag and (flag in "gpiImM" or flag.isdigit()):
                self.pos += 1
            elif flag == "e":
                self.pos += 1
                self.runs_input = True
            elif flag == "w":
                self.pos += 1
                self.writes.append(self._rest_of_line().strip())
                return
            else:
                return

    def _label(self) -> str:
        start = self.pos
        while self._peek() not in ("", "\n", ";", "}"):
            self.pos += 1
        return self.text[start : self.pos]

    def _rest_of_line(self) -> str:
        start = self.pos
        while self._peek() not in ("", "\n"):
            self.pos += 1
        return self.text[start : self.pos]
