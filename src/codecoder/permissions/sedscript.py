"""What a sed script does besides editing the stream: the files it writes or reads and
the commands it runs.

GNU sed can run shell code (`e COMMAND`, `e` alone runs the pattern space, the `e` flag
of `s`) and open files (`w FILE`, `W FILE`, the `w` flag of `s`, `r FILE`, `R FILE`), so
an allowed `sed` can carry a command or a write in its script. This is a scanner of
sed's command syntax (addresses, the commands and their arguments), not a matcher of
letters: `s/hello/world/` mentions `e` and `w` but runs and writes nothing.

It reads a script the way GNU sed 4.9 compiles it (compile.c), because any place where
the two disagree on where a regex, a label or a text ends is a place to hide a command:
`s/[/]*//e` has its `e` flag after the bracket expression `[/]`, which holds the
delimiter; `:a w FILE` is a label `a` and then a write. Where GNU sed reports an error
or the scanner is unsure, it reports the script as unreadable and the caller asks.
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


# Sets of one-character strings, so that the empty string (the script's end) is in none.
_BLANKS = frozenset(" \t")
_BETWEEN_COMMANDS = frozenset(" \t\n\v\f\r;")
_DIGITS = frozenset("0123456789")
_LINE_END = frozenset(("", "\n"))
_LABEL_END = frozenset(("", "\n", " ", "\t", ";", "}", "#"))
_COMMAND_END = frozenset(("", "\n", ";"))
_KEPT_END = frozenset("}#")
"""A `}` or `#` ends a command and is read again as the next one."""
_PLAIN_COMMANDS = frozenset("=dDgGhHnNpPxzF}")
_TEXT_COMMANDS = frozenset("aic")
_LABEL_COMMANDS = frozenset("btTv")
_OPTIONAL_NUMBER = frozenset("qQlL")
_SUBSTITUTE_FLAGS = frozenset("gpiImM")
_CLASS_MARKS = frozenset(".:=")
"""`[.`, `[:` and `[=` open a collating symbol, class or equivalence class in a bracket
expression, inside which `]` does not end the bracket."""


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
        while self._skip(_BETWEEN_COMMANDS):
            self._command()
        return SedEffects(
            True, tuple(self.writes), tuple(self.reads), tuple(self.scripts), self.runs_input
        )

    def _skip(self, chars: frozenset[str]) -> bool:
        """Skip `chars`; whether anything is left."""
        while self._peek() in chars:
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
        addressed = self._addresses()
        self._skip(_BLANKS)
        if self._peek() == "!":
            self.pos += 1
            self._skip(_BLANKS)
            if self._peek() == "!":
                raise _Unreadable
        name = self._take()
        if name == "#" and not addressed:
            self._rest_of_line()
        elif name == "{":
            return
        elif name in _PLAIN_COMMANDS:
            self._end_of_command()
        elif name in _TEXT_COMMANDS:
            self._skip(_BLANKS)
            self._text()
        elif name == "e":
            self._exec()
        elif name in _LABEL_COMMANDS or (name == ":" and not addressed):
            self._label()
        elif name in _OPTIONAL_NUMBER:
            self._skip(_BLANKS)
            self._digits(required=False)
            self._end_of_command()
        elif name in "rR":
            self.reads.append(self._file_name())
        elif name in "wW":
            self.writes.append(self._file_name())
        elif name == "s":
            self._substitute()
        elif name == "y":
            delimiter = self._take()
            self._delimited(delimiter, regex=False)
            self._delimited(delimiter, regex=False)
            self._end_of_command()
        else:
            raise _Unreadable

    def _end_of_command(self) -> None:
        self._skip(_BLANKS)
        char = self._peek()
        if char in _COMMAND_END:
            self.pos += len(char)
        elif char not in _KEPT_END:
            raise _Unreadable

    def _exec(self) -> None:
        """`e` alone runs the pattern space; `e COMMAND` runs COMMAND, after sed has
        turned its escapes into characters (`\\;` is `;`, `\\n` a newline), so a command
        with a backslash is not checked as written: unreadable."""
        self._skip(_BLANKS)
        if self._peek() in _LINE_END:
            self.runs_input = True
            return
        command = self._text()
        if "\\" in command:
            raise _Unreadable
        self.scripts.append(command)

    def _text(self) -> str:
        """The text of `a`, `i`, `c` and `e`: after an optional `\\` (whose next
        character, the newline of `a\\`, is taken as it is), up to a newline that no
        backslash escapes."""
        start = self.pos
        if self._peek() == "\\":
            self.pos += 1
            start = self.pos + (self._peek() == "\n")
            self.pos += len(self._peek())
        while self._peek() not in _LINE_END:
            if self._take() == "\\" and self._peek():
                self.pos += 1
        return self.text[start : self.pos]

    def _addresses(self) -> bool:
        if not self._address():
            return False
        self._skip(_BLANKS)
        if self._peek() == ",":
            self.pos += 1
            self._skip(_BLANKS)
            if self._peek() in ("+", "~"):
                self.pos += 1
                self._skip(_BLANKS)
                self._digits(required=True)
            elif not self._address():
                raise _Unreadable
        return True

    def _address(self) -> bool:
        char = self._peek()
        if char in _DIGITS:
            self._digits(required=True)
            self._skip(_BLANKS)
            if self._peek() == "~":
                self.pos += 1
                self._skip(_BLANKS)
                self._digits(required=True)
        elif char == "$":
            self.pos += 1
        elif char in ("/", "\\"):
            self.pos += 1
            delimiter = self._take() if char == "\\" else "/"
            self._delimited(delimiter, regex=True)
            while self._skip(_BLANKS) and self._peek() in ("I", "M"):
                self.pos += 1
        else:
            return False
        return True

    def _digits(self, *, required: bool) -> None:
        start = self.pos
        while self._peek() in _DIGITS:
            self.pos += 1
        if required and self.pos == start:
            raise _Unreadable

    def _delimited(self, delimiter: str, *, regex: bool) -> None:
        """Up to and past the next `delimiter` that no backslash escapes and, in a
        regex, that is not inside a bracket expression (`[/]`, `[^]/]`); a newline
        ends the script there, which GNU sed reports as an error."""
        if not delimiter.isascii() or delimiter == "\n":
            raise _Unreadable
        while True:
            char = self._take()
            if char == "\n":
                raise _Unreadable
            if char == delimiter:
                return
            if char == "\\":
                self._take()
            elif char == "[" and regex:
                self._bracket()

    def _bracket(self) -> None:
        """Past the `]` that ends a bracket expression, found as GNU sed finds it (its
        snarf_char_class): a `]` first (after an optional `^`) is a member; inside
        `[:…:]`, `[.….]` or `[=…=]` a `]` is a member; a backslash or the delimiter is a
        member anywhere."""
        if self._peek() == "^":
            self.pos += 1
        if self._peek() == "]":
            self.pos += 1
        state = 0  # 0 plain, 1 after `[`, 2 inside `[:`, 3 after the closing `:`
        mark = ""
        while True:
            char = self._take()
            if char == "\n":
                raise _Unreadable
            if char in _CLASS_MARKS and state == 1:
                mark, state = char, 2
                continue
            if char == mark and state == 2:
                state = 3
                continue
            if char == "[":
                state = 1 if state == 0 else state
                continue
            if char == "]":
                if state in (0, 1):
                    return
                if state == 3:
                    state = 0
            state &= ~1

    def _substitute(self) -> None:
        delimiter = self._take()
        self._delimited(delimiter, regex=True)
        self._delimited(delimiter, regex=False)
        while True:
            self._skip(_BLANKS)
            flag = self._peek()
            if flag in _COMMAND_END:
                self.pos += len(flag)
                return
            if flag in _KEPT_END:
                return
            self.pos += 1
            if flag == "e":
                self.runs_input = True
            elif flag == "w":
                self.writes.append(self._file_name())
                return
            elif flag in _DIGITS:
                self._digits(required=False)
            elif flag not in _SUBSTITUTE_FLAGS:
                raise _Unreadable

    def _label(self) -> None:
        """A label ends at a blank, `;`, `}` or `#`: what follows is the next command
        (`:a w FILE` writes)."""
        self._skip(_BLANKS)
        while self._peek() not in _LABEL_END:
            self.pos += 1

    def _file_name(self) -> str:
        """The rest of the line after blanks, as it is: `w` takes `;` and trailing
        blanks into the name."""
        self._skip(_BLANKS)
        name = self._rest_of_line()
        if not name:
            raise _Unreadable
        return name

    def _rest_of_line(self) -> str:
        start = self.pos
        while self._peek() not in _LINE_END:
            self.pos += 1
        return self.text[start : self.pos]
