"""What a shell command line would run and which files it would redirect into.

The permission check needs every simple command of a compound line (`&&`, `||`, `;`,
pipes, newlines, subshells, `$(…)`, backticks, `<(…)`, `sh -c '…'`) and every
redirection target, each judged on its own. A regex cannot give that, so this module
walks a real bash syntax tree (tree-sitter-bash).

Why tree-sitter rather than bashlex (measured on this machine, docs/permissions.md):
importing tree-sitter + the bash grammar costs ~20 ms against ~130-250 ms for bashlex,
and a parse ~12 µs against ~0.9 ms. It is still imported lazily, on the first command
that must be checked.

The walk is a whitelist: a node type it does not know, a parse error, or a place where
tree-sitter and bash are known to disagree makes the result carry a `problem`, and a
command with a problem is asked about, never allowed. Words the shell expands at run
time (`$VAR`, `$(…)`, backticks, globs, `~`, brace expansion, `$'…'`) are marked
`expands`, since their value cannot be matched against a rule.
"""

from __future__ import annotations

import re
import shlex
import threading
import unicodedata
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from codecoder.permissions.words import Unwrapped, Word, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_COMMAND_CHARS = 10_000
"""Longer command lines are asked about: nobody reviews them and parsers degrade."""

MAX_DEPTH = 40
"""Nesting depth (substitutions, subshells, `sh -c`) beyond which we stop and ask."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh"})
"""Shells whose `-c SCRIPT` argument is parsed as nested commands."""

_SHELL_LONG_VALUES = frozenset({"--rcfile", "--init-file"})
"""Long options of bash whose value is the next word."""
_STREAM_FILES = ("/dev/", "/proc/")
"""A script read from here is made up by the line itself (`/dev/stdin`, `/dev/fd/3`)."""
_DOTGLOB_WORDS = ("dotglob", "GLOBIGNORE", "BASHOPTS")
_DEV_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ODD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
_GLOB = re.compile(r"[*?\[]")
_TILDE = re.compile(r"(^|[=:])~")
_QUOTING = re.compile(r"[\\'\"]")
"""Any quoting in a here-document's delimiter makes its body plain data."""
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


class SimpleCommand(msgspec.Struct, frozen=True):
    """A command as bash would execute it: leading `NAME=value` words, then argv."""

    assignments: tuple[Word, ...]
    argv: tuple[Word, ...]
    source: str

    @property
    def words(self) -> tuple[Word, ...]:
        return self.assignments + self.argv


class Redirect(msgspec.Struct, frozen=True):
    """A redirection to or from a file (`>`, `>>`, `&>`, `>|`, `<` …)."""

    op: str
    target: Word
    writes: bool


class ShellParse(msgspec.Struct, frozen=True):
    """Everything a command line runs. `problems` non-empty means: ask, never allow."""

    source: str
    commands: tuple[SimpleCommand, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def changes_directory(self) -> bool:
        """A `cd` anywhere (also `builtin cd`, `env -C dir …`) makes relative
        redirection targets unknowable statically."""
        return any(_changes_directory(unwrap(cmd.argv)) for cmd in self.commands)

    @property
    def globs_dotfiles(self) -> bool:
        """The line may make globs match dot-files (`shopt -s dotglob`, `GLOBIGNORE=…`,
        `BASHOPTS`), so `*` may match `.git`."""
        return self._mentions(_DOTGLOB_WORDS)

    @property
    def uses_cdpath(self) -> bool:
        """The line mentions CDPATH, which makes `cd NAME` look for NAME elsewhere first."""
        return self._mentions(("CDPATH",))

    def _mentions(self, needles: Sequence[str]) -> bool:
        return any(
            needle in word.text for cmd in self.commands for word in cmd.words for needle in needles
        )


class _Unsupported(Exception):
    """The walk met something it will not vouch for."""


@cache
def _parser() -> tuple[Parser, threading.Lock]:
    import tree_sitter
    import tree_sitter_bash

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return parser, threading.Lock()


def parse_command(text: str) -> ShellParse:
    """Parse one command line (as given to `bash -c`)."""
    return _parse(text, depth=0)


def _parse(text: str, depth: int) -> ShellParse:
    problem = _precheck(text)
    if problem is not None:
        return ShellParse(source=text, problems=(problem,))
    parser, lock = _parser()
    data = text.encode()
    with lock:
        tree = parser.parse(data)
    root = tree.root_node
    if root.has_error:
        return ShellParse(source=text, problems=("the shell parser could not read it",))
    walker = _Walker(data, depth)
    try:
        walker.statement(root)
    except _Unsupported as exc:
        return ShellParse(source=text, problems=(str(exc),))
    except RecursionError:
        return ShellParse(source=text, problems=("it is nested too deeply",))
    return ShellParse(
        source=text,
        commands=tuple(walker.commands),
        redirects=tuple(walker.redirects),
        problems=tuple(walker.problems),
    )


def _precheck(text: str) -> str | None:
    if len(text) > MAX_COMMAND_CHARS:
        return f"it is longer than {MAX_COMMAND_CHARS} characters"
    odd = odd_character(text)
    if odd is not None:
        return f"it contains an invisible or control character ({odd})"
    if "\\\n" in text:
        return "it continues a line with a backslash (parsers disagree on those)"
    return None


def odd_character(text: str) -> str | None:
    """The first character that could hide what a line does (bidi controls, zero-width
    characters, control codes, unusual spaces), as `U+XXXX NAME`; None when clean."""
    for char in text:
        if char in "\t\n":
            continue
        code = ord(char)
        if code >= 0x20 and code < 0x7F:
            continue
        if unicodedata.category(char) in _ODD_CATEGORIES or code < 0x20 or code == 0x7F:
            return f"U+{code:04X} {unicodedata.name(char, 'control')}"
    return None


def _name_problems(cmd: SimpleCommand, unwrapped: Unwrapped) -> list[str]:
    """A command whose name (behind its wrappers) or whose wrappers' own words are only
    known at run time, or whose name could be a look-alike, cannot be vouched for."""
    problems: list[str] = []
    if not unwrapped.certain:
        problems.append(f"what `{_excerpt(cmd.source)}` runs is only known at run time")
    name = unwrapped.argv[0] if unwrapped.argv else None
    if name is None:
        return problems
    if name.expands:
        problems.append(f"the command name `{name.text}` is only known at run time")
    elif not name.text.isascii():
        problems.append(f"the command name `{name.text}` has non-ASCII characters")
    return problems


class Script(NamedTuple):
    """Shell code a command runs: written out in the line (`text`), or only known at run
    time (`text` None; `origin` says where it comes from)."""

    text: str | None
    origin: str = ""


def shell_script(unwrapped: Unwrapped) -> Script | None:
    """The shell code a command runs, also behind wrappers (`env bash -c …`, `builtin
    eval …`): the SCRIPT of `sh -c SCRIPT` / `bash -lc -- SCRIPT`, the words of `eval`;
    only known at run time for `bash -c "$X"`, `eval "$X"`, `source <(…)`, and a shell
    that reads its script from standard input (`… | sh`). None: it runs no shell code
    (or a script file, which is like running any program)."""
    name, args = unwrapped.name, unwrapped.argv[1:]
    if name == "eval":
        return _eval_script(args)
    if name in (".", "source"):
        return _sourced_script(args)
    if name in SHELLS:
        return _shell_script(args)
    return None


def _eval_script(args: tuple[Word, ...]) -> Script | None:
    """eval joins its words with spaces and runs the result."""
    if args and args[0] == Word("--"):
        args = args[1:]
    if not args:
        return None
    text = " ".join(word.text for word in args)
    return Script(None, f"`{_excerpt(text)}`") if any(w.expands for w in args) else Script(text)


def _sourced_script(args: tuple[Word, ...]) -> Script | None:
    if args and args[0] == Word("--"):
        args = args[1:]
    return _script_file(args[0]) if args else None


def _script_file(word: Word) -> Script | None:
    """A script file is like any program, unless the line makes up its contents
    (`<(…)`, `$F`, `/dev/stdin`)."""
    if word.expands or word.text.startswith(_STREAM_FILES):
        return Script(None, f"`{_excerpt(word.text)}`")
    return None


def _shell_script(args: tuple[Word, ...]) -> Script | None:
    """What `sh [options] [-c] [--] [SCRIPT | FILE]` runs. `-o NAME`/`-O NAME` take a
    value; `-` or `--` end the options; with `c` among them the first word after is the
    script; else the first word is a script file, and without one (or with `-s`) the
    script is read from standard input."""
    flags = ""
    index = 0
    while index < len(args):
        text = args[index].text
        if args[index].expands:
            return Script(None, f"`{_excerpt(text)}`")
        if text in ("-", "--"):
            index += 1
            break
        if len(text) < 2 or text[0] not in "-+":
            break
        if text.startswith("--"):
            index += 2 if text in _SHELL_LONG_VALUES else 1
            continue
        flags += text[1:] if text[0] == "-" else ""
        index += 1 + text.count("o") + text.count("O")
    operand = args[index] if index < len(args) else None
    if "c" in flags:
        if operand is None or not operand.expands:
            return None if operand is None else Script(operand.text)
        return Script(None, f"`{_excerpt(operand.text)}`")
    if operand is None or "s" in flags:
        return Script(None, "its standard input")
    return _script_file(operand)


def _changes_directory(unwrapped: Unwrapped) -> bool:
    return unwrapped.chdir or unwrapped.name in ("cd", "pushd", "popd")


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _Walker:
    """Collects simple commands and redirections from a tree-sitter-bash tree."""

    def __init__(self, data: bytes, depth: int) -> None:
        self.data = data
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.problems: list[str] = []

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode()

    # --- statements --------------------------------------------------------------

    def statement(self, node: Node) -> None:
        handler = _STATEMENTS.get(node.type)
        if handler is None:
            raise _Unsupported(f"it uses `{node.type}`, which the check does not follow")
        handler(self, node)

    def children(self, node: Node) -> None:
        for child in node.named_children:
            self.statement(child)

    def loose(self, node: Node) -> None:
        """`case` and C-style `for`: statements inside are checked, the rest searched for
        substitutions."""
        for child in node.named_children:
            if child.type in _STATEMENTS:
                self.statement(child)
            else:
                self.nested(child)

    def skip(self, node: Node) -> None:
        """Comments and the like: nothing runs."""

    def compound(self, node: Node) -> None:
        first = node.children[0] if node.children else None
        if first is not None and first.type == "((":
            self.arithmetic_statement(node)
        else:
            self.children(node)

    def arithmetic_statement(self, node: Node) -> None:
        self.nested(node)
        if self._has_variables(node):
            self.commands.append(_opaque("((", self.text(node)))

    def test(self, node: Node) -> None:
        """`[[ … ]]` and `[ … ]` only read; with expansions inside they may evaluate
        arithmetic on variable contents, so they count as a command then."""
        self.nested(node)
        if self._has_variables(node):
            self.commands.append(_opaque(self.text(node.children[0]), self.text(node)))

    def _has_variables(self, node: Node) -> bool:
        if node.type in _EXPANSIONS or node.type == "variable_name":
            return True
        return any(self._has_variables(child) for child in node.named_children)

    def for_loop(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "do_group":
                self.statement(child)
            elif child.type != "variable_name":
                self.word(child)

    def function(self, node: Node) -> None:
        """The body of a function runs whenever its name is called: check it as if inline."""
        for child in node.named_children[1:]:
            self.statement(child)

    def redirected(self, node: Node) -> None:
        for child in node.named_children:
            if child.type in _REDIRECTS:
                self.redirect(child)
            else:
                self.statement(child)

    def command(self, node: Node) -> None:
        assignments: list[Word] = []
        argv: list[Word] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child))
            elif child.type in _REDIRECTS:
                self.redirect(child)
            elif child.type == "command_name":
                argv.append(self.word(child.named_children[0]))
            else:
                argv.append(self.word(child))
        self.add_command(tuple(assignments), tuple(argv), node)

    def declaration(self, node: Node) -> None:
        """`export`/`declare`/`local`/`readonly`/`typeset`/`unset`: a command like any other."""
        argv = [Word(self.text(node.children[0]))]
        for child in node.named_children:
            if child.type == "variable_assignment":
                argv.append(self.assignment(child))
            elif child.type == "variable_name":
                argv.append(Word(self.text(child)))
            else:
                argv.append(self.word(child))
        self.add_command((), tuple(argv), node)

    def assignments(self, node: Node) -> None:
        """Bare `NAME=value` changes what later commands see (PATH, IFS …): a command too."""
        words = [self.assignment(child) for child in node.named_children]
        self.add_command(tuple(words), (), node)

    def single_assignment(self, node: Node) -> None:
        self.add_command((self.assignment(node),), (), node)

    def add_command(
        self, assignments: tuple[Word, ...], argv: tuple[Word, ...], node: Node
    ) -> None:
        command = SimpleCommand(assignments, argv, self.text(node))
        self.commands.append(command)
        unwrapped = unwrap(argv)
        self.problems.extend(_name_problems(command, unwrapped))
        script = shell_script(unwrapped)
        if script is None:
            return
        if script.text is None:
            self.problems.append(
                f"`{_excerpt(command.source)}` runs shell code only known at run time"
                f" ({script.origin})"
            )
        else:
            self.script(script.text)

    def script(self, text: str) -> None:
        if self.depth >= MAX_DEPTH:
            raise _Unsupported("it is nested too deeply")
        inner = _parse(text, self.depth + 1)
        self.commands.extend(inner.commands)
        self.redirects.extend(inner.redirects)
        self.problems.extend(inner.problems)

    # --- redirections ------------------------------------------------------------

    def redirect(self, node: Node) -> None:
        if node.type == "file_redirect":
            self.file_redirect(node)
        elif node.type == "heredoc_redirect":
            self.heredoc(node)
        else:
            self.nested(node)

    def file_redirect(self, node: Node) -> None:
        op = next(self.text(c) for c in node.children if not c.is_named)
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        if len(targets) > 1:
            raise _Unsupported("words follow a redirection target (parsers disagree on those)")
        if not targets:
            return
        target = self.word(targets[0])
        if op in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
            return
        if target.text in _DEV_SINKS:
            return
        self.redirects.append(Redirect(op=op, target=target, writes=">" in op))

    def heredoc(self, node: Node) -> None:
        start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
        end = next((c for c in node.named_children if c.type == "heredoc_end"), None)
        if start is None or end is None:
            raise _Unsupported("a here-document has no end")
        raw_delimiter = self.text(start)
        delimiter = _heredoc_delimiter(raw_delimiter)
        strip_tabs = any(c.type == "<<-" for c in node.children)
        self._check_heredoc_end(end, delimiter, strip_tabs)
        for child in node.named_children:
            if child.type in ("heredoc_start", "heredoc_end"):
                continue
            if child.type in _REDIRECTS:
                self.redirect(child)
            elif child.type == "heredoc_body":
                self._check_heredoc_body(child, delimiter, strip_tabs)
                if not _QUOTING.search(raw_delimiter):
                    self._check_unparsed_substitutions(child)
                self.nested(child)
            elif child.type in _STATEMENTS:  # `cat <<EOF && rm x`, `cat <<EOF | sh`
                self.statement(child)
            else:  # `rm <<EOF -rf x`: arguments tree-sitter files under the redirection
                raise _Unsupported("words follow a here-document's start (parsers disagree)")

    def _check_heredoc_end(self, end: Node, delimiter: str, strip_tabs: bool) -> None:
        line_start = self.data.rfind(b"\n", 0, end.start_byte) + 1
        line_end = self.data.find(b"\n", end.end_byte)
        line = self.data[line_start : len(self.data) if line_end < 0 else line_end].decode()
        if (line.lstrip("\t") if strip_tabs else line) != delimiter:
            raise _Unsupported("a here-document ends in a way parsers disagree on")

    def _check_heredoc_body(self, body: Node, delimiter: str, strip_tabs: bool) -> None:
        for line in self.text(body).split("\n"):
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                raise _Unsupported("a here-document ends in a way parsers disagree on")

    def _check_unparsed_substitutions(self, body: Node) -> None:
        """In an unquoted here-document bash runs `$(…)` and backticks, but tree-sitter
        leaves some as plain text (backticks anywhere, `$(…)` after leading blanks). Text
        outside the substitutions it did parse must hold none of them."""
        text = bytearray(self.data[body.start_byte : body.end_byte])
        for sub in _substitutions(body):
            start, stop = sub.start_byte - body.start_byte, sub.end_byte - body.start_byte
            text[start:stop] = b" " * (stop - start)
        if any(marker in text for marker in (b"`", b"$(", b"$[")):
            raise _Unsupported("a here-document runs a substitution the parser does not see")

    # --- words -------------------------------------------------------------------

    def word(self, node: Node) -> Word:
        """The value of an argument-like node, collecting commands nested in it."""
        kind = node.type
        if kind in ("word", "number"):
            return _plain_word(self.text(node))
        if kind == "raw_string":
            return Word(self.text(node)[1:-1])
        if kind == "string":
            return self.string(node)
        if kind == "concatenation":
            return self.concatenation(node)
        if kind in _EXPANSIONS or kind in _OPAQUE_WORDS:
            self.nested(node)
            return Word(self.text(node), expands=True)
        raise _Unsupported(f"it uses `{kind}`, which the check does not follow")

    def string(self, node: Node) -> Word:
        expands = False
        for child in node.named_children:
            if child.type != "string_content":
                expands = True
                self.nested(child)
        raw = self.text(node)
        return Word(raw, expands=True) if expands else Word(_unescape_double(raw[1:-1]))

    def concatenation(self, node: Node) -> Word:
        parts = [self.word(child) for child in node.named_children]
        raw = self.text(node)
        if any(part.expands for part in parts) or _BRACE.search(raw):
            return Word(raw, expands=True)
        return Word("".join(part.text for part in parts))

    def assignment(self, node: Node) -> Word:
        name = self.text(node.named_children[0])
        values = node.named_children[1:]
        operator = next((self.text(c) for c in node.children if not c.is_named), "=")
        if not values:
            return Word(f"{name}{operator}")
        value = self.word(values[0]) if values[0].type != "array" else self._array(values[0])
        if value.expands:
            return Word(self.text(node), expands=True)
        return Word(f"{name}{operator}{value.text}")

    def _array(self, node: Node) -> Word:
        self.nested(node)
        return Word(self.text(node), expands=True)

    def nested(self, node: Node) -> None:
        """Find the commands inside an expression (substitutions run even when quoted)."""
        if node.type in ("command_substitution", "process_substitution"):
            self.substitution(node)
            return
        for child in node.named_children:
            self.nested(child)

    def substitution(self, node: Node) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unsupported("it is nested too deeply")
        try:
            for child in node.named_children:
                self.statement(child)
        finally:
            self.depth -= 1


def _substitutions(node: Node) -> list[Node]:
    """The outermost command substitutions in `node`."""
    if node.type == "command_substitution":
        return [node]
    return [sub for child in node.named_children for sub in _substitutions(child)]


def _heredoc_delimiter(raw: str) -> str:
    try:
        words = shlex.split(raw)
    except ValueError as exc:
        raise _Unsupported("a here-document delimiter is malformed") from exc
    if len(words) != 1:
        raise _Unsupported("a here-document delimiter is malformed")
    return words[0]


def _opaque(name: str, source: str) -> SimpleCommand:
    return SimpleCommand((), (Word(name), Word(source, expands=True)), source)


def _plain_word(raw: str) -> Word:
    """An unquoted word: backslashes quote the next character; globs, `~` and brace
    lists are expanded by the shell, so their value is unknown here."""
    unquoted = re.sub(r"\\.", "", raw)
    if _GLOB.search(unquoted) or _TILDE.search(unquoted) or _BRACE.search(unquoted):
        return Word(raw, expands=True)
    return Word(re.sub(r"\\(.)", r"\1", raw))


def _unescape_double(inner: str) -> str:
    r"""Inside double quotes a backslash quotes only `$`, `` ` ``, `"` and `\`."""
    return re.sub(r'\\([$`"\\])', r"\1", inner)


_EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
    }
)
_OPAQUE_WORDS = frozenset({"ansi_c_string", "translated_string", "brace_expression", "array"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})

_STATEMENTS: dict[str, Any] = {
    "program": _Walker.children,
    "list": _Walker.children,
    "pipeline": _Walker.children,
    "subshell": _Walker.children,
    "negated_command": _Walker.children,
    "if_statement": _Walker.children,
    "elif_clause": _Walker.children,
    "else_clause": _Walker.children,
    "while_statement": _Walker.children,
    "do_group": _Walker.children,
    "compound_statement": _Walker.compound,
    "for_statement": _Walker.for_loop,
    "c_style_for_statement": _Walker.loose,
    "case_statement": _Walker.loose,
    "case_item": _Walker.loose,
    "function_definition": _Walker.function,
    "redirected_statement": _Walker.redirected,
    "command": _Walker.command,
    "declaration_command": _Walker.declaration,
    "unset_command": _Walker.declaration,
    "variable_assignments": _Walker.assignments,
    "variable_assignment": _Walker.single_assignment,
    "test_command": _Walker.test,
    "comment": _Walker.skip,
}
