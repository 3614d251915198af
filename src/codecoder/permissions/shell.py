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
command with a problem is asked about, never allowed. Such a line still gets a
best-effort split into commands (`guessed`), which only deny and ask rules look at: a
deny rule must not turn into a question because the line around it is unreadable.
Words the shell expands at run time (`$VAR`, `$(…)`, backticks, globs, `~`, brace
expansion, `$'…'`) are marked `expands`, since their value cannot be matched against a
rule. Words bash evaluates as code although they are quoted (arithmetic, subscripts,
names: evaluation.py) and what programs carry in their arguments (programs.py) are
followed too.
"""

from __future__ import annotations

import itertools
import re
import shlex
import threading
import unicodedata
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.permissions import evaluation
from codecoder.permissions.programs import (
    CONFIG_PREFIXES,
    CONFIG_VARIABLES,
    DEFERRED_CODE_VARIABLES,
    HARMLESS_VARIABLES,
    PROGRAM_VARIABLES,
    Carried,
    Script,
    carried,
)
from codecoder.permissions.words import Word, excerpt, program_name
from codecoder.permissions.wrappers import unwrap

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_COMMAND_CHARS = 10_000
"""Longer command lines are asked about: nobody reviews them and parsers degrade."""

MAX_DEPTH = 40
"""Nesting depth (substitutions, subshells, `sh -c`) beyond which we stop and ask."""

MAX_GUESSED_WORDS = 100_000
"""A best-effort split keeps at most this many words (a line this long was refused
anyway; deny rules still see its first 100,000 words)."""

_DOTGLOB_WORDS = ("dotglob", "GLOBIGNORE", "BASHOPTS")
_DEV_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ODD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
_GLOB = re.compile(r"[*?\[]")
_TILDE = re.compile(r"(^|[=:])~")
_QUOTING = re.compile(r"[\\'\"]")
"""Any quoting in a here-document's delimiter makes its body plain data."""
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_SEPARATORS = re.compile(r"[;&|()\n`{}<>]|\$\(")
_UNQUOTE = str.maketrans("", "", "'\"\\")
_GUESS_WORDS = re.compile(r"[\s=,!/]+")
"""A guess also breaks words where a value may start a command: `exec=rm x`,
`{rm,-f,x}`, `alias.x=!rm`, `s/.*/rm x/e`."""
"""A guess reads `r''m` and `r\\m` as bash does: `rm`."""
_FD_VARIABLE = re.compile(r"\{[^{}]*\[.*\]\}", re.DOTALL)
"""`{NAME[SUB]}>file` stores the file descriptor in NAME[SUB]."""
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAME_TESTS = frozenset({"-v", "-R"})
_DECLARATIONS = frozenset({"declare", "typeset", "local", "export", "readonly"})


class SimpleCommand(msgspec.Struct, frozen=True):
    """A command as bash would execute it: leading `NAME=value` words, then argv.

    A command another one carries (`rm x` in `sudo rm x`, in `find -exec rm {} ;`, in
    `su -c 'rm x'`) names that one as its `carrier`; `carried_from` is where, in a
    carrier's argv, what it carries begins. `guessed`: from a best-effort split of a
    line the parser could not read (only deny and ask rules look at it)."""

    assignments: tuple[Word, ...]
    argv: tuple[Word, ...]
    source: str
    carried_from: int | None = None
    carrier: SimpleCommand | None = None
    guessed: bool = False

    @property
    def words(self) -> tuple[Word, ...]:
        return self.assignments + self.argv


class Redirect(msgspec.Struct, frozen=True):
    """A redirection to or from a file (`>`, `>>`, `&>`, `>|`, `<` …), or a file a
    program writes or reads through an argument (`op` "arg": `find -fprint F`)."""

    op: str
    target: Word
    writes: bool


class ShellParse(msgspec.Struct, frozen=True):
    """Everything a command line runs. `problems` non-empty means: ask, never allow."""

    source: str
    commands: tuple[SimpleCommand, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    problems: tuple[str, ...] = ()
    arithmetic: frozenset[str] = frozenset()
    """Variables bash evaluates as arithmetic somewhere in the line."""
    tainted: frozenset[str] = frozenset()
    """Variables the line may give a value that is not a number."""

    @property
    def changes_directory(self) -> bool:
        """A `cd` anywhere (also `builtin cd`, `env -C dir …`) makes relative
        redirection targets unknowable statically."""
        return any(_changes_directory(cmd.argv) for cmd in self.commands)

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
    """Parse one command line (as given to `bash -c`). A line with a problem also gets
    the best-effort split of the whole line, for deny and ask rules: the code it hides
    (`bash -c "rm x $Y"`, `echo 'rm x' | sh`, `awk '…system("rm x")…'`) is still text
    of the line."""
    parsed = _parse(text, depth=0)
    problems = list(parsed.problems)
    unsafe = sorted(n for n in parsed.arithmetic if not evaluation.numeric(n, parsed.tainted))
    if unsafe:
        names = ", ".join(f"`{name}`" for name in unsafe[:5])
        problems.append(
            f"bash evaluates {names} as arithmetic, and the value may be code"
            " (a value that is not a number, from the environment or from the line itself)"
        )
    if not problems:
        return parsed
    guessed = () if any(c.guessed for c in parsed.commands) else guess_commands(text)
    return msgspec.structs.replace(
        parsed, commands=(*parsed.commands, *guessed), problems=tuple(problems)
    )


def _parse(text: str, depth: int) -> ShellParse:
    problem = _precheck(text)
    if problem is not None:
        return _unreadable(text, problem)
    parser, lock = _parser()
    data = text.encode()
    with lock:
        tree = parser.parse(data)
    root = tree.root_node
    if root.has_error:
        return _unreadable(text, "the shell parser could not read it")
    walker = _Walker(data, depth)
    try:
        walker.statement(root)
    except _Unsupported as exc:
        return _unreadable(text, str(exc))
    except RecursionError:
        return _unreadable(text, "it is nested too deeply")
    return ShellParse(
        source=text,
        commands=tuple(dict.fromkeys(walker.commands)),
        redirects=tuple(dict.fromkeys(walker.redirects)),
        problems=tuple(dict.fromkeys(walker.problems)),
        arithmetic=frozenset(walker.arithmetic),
        tainted=frozenset(walker.tainted),
    )


def _unreadable(text: str, problem: str) -> ShellParse:
    return ShellParse(source=text, commands=guess_commands(text), problems=(problem,))


def guess_commands(text: str) -> tuple[SimpleCommand, ...]:
    """A best-effort split of a line that cannot be parsed: pieces between shell
    operators, quotes dropped, each piece's words a command. Only deny and ask rules
    read these (and they also try every later word as a command's name), so that
    `rm -f victim; true; true; …` is still denied by `rm:*` when it is too long to
    check. Linear in the line's length."""
    commands: list[SimpleCommand] = []
    budget = MAX_GUESSED_WORDS
    flat = text.replace("\\\n", "").translate(_UNQUOTE)
    for piece in _SEPARATORS.split(flat):
        words = tuple(Word(word) for word in _GUESS_WORDS.split(piece) if word)[:budget]
        if words:
            commands.append(SimpleCommand((), words, piece.strip(), guessed=True))
            budget -= len(words)
        if budget <= 0:
            break
    return tuple(commands)


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


def _name_problems(cmd: SimpleCommand, found: Carried) -> list[str]:
    """A command whose name, or whose wrapper's own words, are only known at run time,
    or whose name could be a look-alike, cannot be vouched for."""
    problems: list[str] = []
    if not found.certain:
        problems.append(f"what `{excerpt(cmd.source)}` runs is only known at run time")
    name = cmd.argv[0] if cmd.argv else None
    if name is None:
        return problems
    if name.expands:
        problems.append(f"the command name `{name.text}` is only known at run time")
    elif not name.text.isascii():
        problems.append(f"the command name `{name.text}` has non-ASCII characters")
    return problems


def _changes_directory(argv: tuple[Word, ...]) -> bool:
    unwrapped = unwrap(argv)
    return unwrapped.chdir or unwrapped.name in ("cd", "pushd", "popd")


class _Walker:
    """Collects simple commands and redirections from a tree-sitter-bash tree."""

    def __init__(self, data: bytes, depth: int) -> None:
        self.data = data
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.problems: list[str] = []
        self.arithmetic: set[str] = set()
        self.tainted: set[str] = set()

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
            self.nested(node)
            self.arith(self.text(node)[2:-2])
        else:
            self.children(node)

    def c_style_for(self, node: Node) -> None:
        """`for ((init; test; step))`: three arithmetic expressions, then the body."""
        opening = next(c for c in node.children if c.type == "((")
        closing = next(c for c in node.children if c.type == "))")
        for clause in self.data[opening.end_byte : closing.start_byte].decode().split(";"):
            self.arith(clause)
        for child in node.named_children:
            if child.type == "do_group":
                self.statement(child)
            else:
                self.nested(child)

    def test(self, node: Node) -> None:
        """`[[ … ]]` and `[ … ]` only read, but bash evaluates the operands of `-eq`, `-lt`
        … in `[[` as arithmetic, and the operand of `-v`/`-R` as a name."""
        self.nested(node)
        arithmetic = self.text(node.children[0]) == "[["
        for child in node.named_children:
            self.test_expression(child, arithmetic=arithmetic)

    def test_expression(self, node: Node, *, arithmetic: bool) -> None:
        operator = next((c for c in node.children if c.type == "test_operator"), None)
        op = self.text(operator) if operator is not None else ""
        operands = [c for c in node.named_children if c.type != "test_operator"]
        if node.type == "binary_expression" and arithmetic and op in _ARITHMETIC_TESTS:
            for operand in operands:
                self.arith(self.text(operand))
            return
        if node.type == "unary_expression" and op in _NAME_TESTS and operands:
            self.name(self.word(operands[0]), f"`{op}` names")
            return
        for child in operands:
            self.test_expression(child, arithmetic=arithmetic)

    def for_loop(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "do_group":
                self.statement(child)
            elif child.type == "variable_name":
                self.tainted.add(self.text(child))
            else:
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
        for word in argv[1:]:
            if _FD_VARIABLE.fullmatch(word.text):
                self.problems.append(
                    f"`{excerpt(word.text)}` before a redirection names a variable whose"
                    " subscript bash evaluates"
                )
        self.add_command(tuple(assignments), tuple(argv), self.text(node))

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
        self.add_command((), tuple(argv), self.text(node))

    def assignments(self, node: Node) -> None:
        """Bare `NAME=value` changes what later commands see (PATH, IFS …): a command too."""
        words = [self.assignment(child) for child in node.named_children]
        self.add_command(tuple(words), (), self.text(node))

    def single_assignment(self, node: Node) -> None:
        self.add_command((self.assignment(node),), (), self.text(node))

    def add_command(
        self,
        assignments: tuple[Word, ...],
        argv: tuple[Word, ...],
        source: str,
        carrier: SimpleCommand | None = None,
    ) -> None:
        """Record a command, and whatever it carries as commands of their own."""
        found = carried(argv)
        command = SimpleCommand(assignments, argv, source, found.start, carrier)
        self.commands.append(command)
        self.problems.extend(_name_problems(command, found))
        self.problems.extend(found.problems)
        for word in assignments:
            self.variable(word)
        if not found.commands:  # else they are the carried command's assignments
            for word in found.variables:
                self.variable(word)
        self.builtin(argv)
        for script in found.scripts:
            self.carried_script(script, command)
        for nested in found.commands:
            if len(self.commands) > MAX_GUESSED_WORDS:
                raise _Unsupported("it carries too many commands")
            self.add_command(found.variables, nested, source, carrier=command)
        for target, writes in [(w, True) for w in found.writes] + [(r, False) for r in found.reads]:
            if target.text not in _DEV_SINKS:
                self.redirects.append(Redirect(op="arg", target=target, writes=writes))

    def carried_script(self, script: Script, carrier: SimpleCommand) -> None:
        if script.text is not None:
            self.script(script.text, carrier)
            return
        self.problems.append(
            f"`{excerpt(carrier.source)}` runs shell code only known at run time ({script.origin})"
        )

    def script(self, text: str, carrier: SimpleCommand | None = None) -> None:
        if self.depth >= MAX_DEPTH:
            raise _Unsupported("it is nested too deeply")
        inner = _parse(text, self.depth + 1)
        for found in inner.commands:
            if carrier is not None and found.carrier is None:
                found = msgspec.structs.replace(found, carrier=carrier)  # noqa: PLW2901
            self.commands.append(found)
        self.redirects.extend(inner.redirects)
        self.problems.extend(inner.problems)
        self.arithmetic |= inner.arithmetic
        self.tainted |= inner.tainted

    # --- places where bash evaluates a word (evaluation.py) ------------------------

    def arith(self, text: str) -> None:
        found = evaluation.arithmetic(text)
        self.arithmetic |= found.names
        if found.problem is not None:
            self.problems.append(
                f"bash evaluates `{excerpt(text.strip())}` as arithmetic: {found.problem}"
            )

    def name(self, word: Word, where: str) -> None:
        problem = evaluation.name_problem(word, where)
        if problem is not None:
            self.problems.append(problem)

    def variable(self, word: Word) -> None:
        """An assignment (`NAME=value`, also `declare NAME=value`, `env NAME=value cmd`):
        its subscripts are arithmetic, and some variables hold code bash or a program
        runs later."""
        found = evaluation.assignment(word)
        if found is None:
            name = word.text.split("=", 1)[0]
            if "=" in word.text and not word.text.startswith("-"):
                self.problems.append(f"it sets `{excerpt(name)}`, which bash may import as code")
            return
        if found.name in evaluation.INTEGER_SPECIALS:
            self.arith(found.value if found.literal else word.text.split("=", 1)[1])
        if not found.numeric:
            self.tainted.add(found.name)
        for subscript in found.subscripts():
            self.arith(subscript)
        value = Word(found.value, expands=not found.literal)
        if found.name in DEFERRED_CODE_VARIABLES and (
            value.expands or "$" in value.text or "`" in value.text
        ):
            self.problems.append(f"bash runs the code in {found.name}'s value later")
        elif found.name in PROGRAM_VARIABLES and found.value:
            self.carried_script(
                Script(None, f"`{excerpt(word.text)}`") if value.expands else Script(value.text),
                SimpleCommand((word,), (), word.text),
            )
        elif found.name in CONFIG_VARIABLES or (
            found.name.startswith(CONFIG_PREFIXES) and found.name not in HARMLESS_VARIABLES
        ):
            self.problems.append(
                f"{found.name} makes programs take code or settings from elsewhere"
            )

    def builtin(self, argv: tuple[Word, ...]) -> None:
        """Builtins that take variable names or arithmetic among their words."""
        name = program_name(argv)
        check = _BUILTINS.get(name or "")
        if check is not None and argv[0].text == name:
            check(self, argv[1:])

    def declare(self, args: tuple[Word, ...]) -> None:
        for word in args:
            text = word.text
            if word.expands and not evaluation.assignment(word):
                self.problems.append(
                    f"it declares a name only known at run time (`{excerpt(text)}`)"
                )
            elif text.startswith(("-", "+")) and len(text) > 1:
                if evaluation.INTEGER_FLAGS & set(text[1:]):
                    self.problems.append(
                        f"`{text}` makes bash evaluate later values as code (integer or reference)"
                    )
            elif evaluation.assignment(word) is not None:
                self.variable(word)
                self.name(Word(text.split("=", 1)[0].rstrip("+")), "it declares")
                self._declared_array(word)
            else:
                self.name(word, "it declares")

    def export(self, args: tuple[Word, ...]) -> None:
        for word in args:
            if word.text.startswith("-") and not word.expands:
                continue
            if evaluation.assignment(word) is not None:
                self.variable(word)
                self.name(Word(word.text.split("=", 1)[0].rstrip("+")), "it exports")
                self._declared_array(word)
            else:
                self.name(word, "it exports")

    def _declared_array(self, word: Word) -> None:
        """`declare -a 'a=($(…))'`: to declare, a quoted value in parentheses is an
        array that bash expands, substitutions and all."""
        found = evaluation.assignment(word)
        expanded = found is not None and found.literal and found.compound
        if expanded and found is not None and any(m in found.value for m in ("$", "`")):
            self.problems.append(f"`{excerpt(word.text)}` is an array bash expands")

    def unset(self, args: tuple[Word, ...]) -> None:
        if any(word.text == "-f" for word in args):
            return
        for word in args:
            if not (word.text.startswith("-") and not word.expands):
                self.name(word, "it unsets")

    def assigns(self, names: list[Word], builtin: str) -> None:
        for word in names:
            self.name(word, f"`{builtin}` assigns")
            self.tainted.add(word.text.split("[", 1)[0])

    def read(self, args: tuple[Word, ...]) -> None:
        names, values = _split_options(args, "dinNptua")
        self.assigns(names + values.get("a", []), "read")

    def mapfile(self, args: tuple[Word, ...]) -> None:
        names, _ = _split_options(args, "dnOsuCc")
        self.assigns(names[-1:], "mapfile")

    def printf(self, args: tuple[Word, ...]) -> None:
        _, values = _split_options(args[:2], "v")
        self.assigns(values.get("v", []), "printf -v")

    def getopts(self, args: tuple[Word, ...]) -> None:
        self.assigns(list(args[1:2]), "getopts")

    def wait(self, args: tuple[Word, ...]) -> None:
        _, values = _split_options(args, "p")
        self.assigns(values.get("p", []), "wait -p")

    def let(self, args: tuple[Word, ...]) -> None:
        for word in args:
            self.arith(word.text)

    def test_builtin(self, args: tuple[Word, ...]) -> None:
        for option, operand in itertools.pairwise(args):
            if option.text in _NAME_TESTS:
                self.name(operand, f"`{option.text}` names")

    def shopt(self, args: tuple[Word, ...]) -> None:
        if any("expand_aliases" in word.text for word in args):
            self.problems.append("it turns on aliases, which change what later commands run")

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
        """In an unquoted here-document bash expands `$(…)`, backticks and `${…}`, but
        tree-sitter leaves some as plain text (backticks anywhere, `$(…)` and `${…}`
        after leading blanks). Text outside the expansions it did parse must hold none
        of them."""
        text = bytearray(self.data[body.start_byte : body.end_byte])
        for sub in _parsed_substitutions(body, _PARSED_OR_EXPANSION):
            start, stop = sub.start_byte - body.start_byte, sub.end_byte - body.start_byte
            text[start:stop] = b" " * (stop - start)
        plain = re.sub(rb"\\.", b"", bytes(text))
        if any(marker in plain for marker in (b"`", b"$(", b"$[", b"${")):
            raise _Unsupported("a here-document expands text the parser does not see")

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
        self._check_hidden(node, "a quoted string")
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
        self.nested(node.named_children[0])  # `a[$(…)]=1`: the subscript runs
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
        """Find the commands inside an expression (substitutions run even when quoted),
        and what bash evaluates there (`$((…))`, `${a[…]}`, `${x:…}`)."""
        if node.type in ("command_substitution", "process_substitution"):
            self.substitution(node)
            return
        if node.type == "arithmetic_expansion":
            text = self.text(node)
            self.arith(text[3:-2] if text.startswith("$((") else text[2:-1])
        elif node.type == "expansion":
            self._check_hidden(node, "an expansion")
            self.expansion(self.text(node))
        for child in node.named_children:
            self.nested(child)

    def expansion(self, text: str) -> None:
        found = evaluation.expansion(text)
        if found.problem is not None:
            self.problems.append(found.problem)
        for part in found.arithmetic:
            self.arith(part)
        if found.assigns is not None:
            self.tainted.add(found.assigns)

    def _check_hidden(self, node: Node, where: str) -> None:
        """Inside double quotes and `${…}` bash runs `$(…)` and backticks that
        tree-sitter can read as plain text (`"${x:-'$(id)'}"`, where the single quotes
        are no quotes to bash). Outside what it parsed as substitutions, and escapes,
        such text must hold none."""
        text = bytearray(self.data[node.start_byte : node.end_byte])
        for sub in _parsed_substitutions(node):
            start, stop = sub.start_byte - node.start_byte, sub.end_byte - node.start_byte
            text[start:stop] = b" " * (stop - start)
        plain = re.sub(rb"\\.", b"", bytes(text))
        if any(marker in plain for marker in (b"`", b"$(", b"$[")):
            raise _Unsupported(f"{where} runs a substitution the parser does not see")

    def substitution(self, node: Node) -> None:
        if self.text(node).startswith("`") and "\\`" in self.text(node):
            raise _Unsupported("backticks are nested inside backticks")
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


_PARSED = frozenset({"command_substitution", "process_substitution", "arithmetic_expansion"})


_PARSED_OR_EXPANSION = _PARSED | {"expansion"}


def _parsed_substitutions(node: Node, kinds: frozenset[str] = _PARSED) -> list[Node]:
    """The outermost nodes of `kinds` tree-sitter parsed below `node` (not `node`)."""
    return [
        found
        for child in node.named_children
        for found in ([child] if child.type in kinds else _parsed_substitutions(child, kinds))
    ]


def _heredoc_delimiter(raw: str) -> str:
    try:
        words = shlex.split(raw)
    except ValueError as exc:
        raise _Unsupported("a here-document delimiter is malformed") from exc
    if len(words) != 1:
        raise _Unsupported("a here-document delimiter is malformed")
    return words[0]


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
    "c_style_for_statement": _Walker.c_style_for,
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

_BUILTINS: dict[str, Any] = {
    **dict.fromkeys(("declare", "typeset", "local"), _Walker.declare),
    **dict.fromkeys(("export", "readonly"), _Walker.export),
    "unset": _Walker.unset,
    "read": _Walker.read,
    "mapfile": _Walker.mapfile,
    "readarray": _Walker.mapfile,
    "printf": _Walker.printf,
    "getopts": _Walker.getopts,
    "wait": _Walker.wait,
    "let": _Walker.let,
    "test": _Walker.test_builtin,
    "[": _Walker.test_builtin,
    "shopt": _Walker.shopt,
}
"""Builtins whose words bash evaluates as names or arithmetic (evaluation.py)."""


def _split_options(
    args: tuple[Word, ...], with_value: str
) -> tuple[list[Word], dict[str, list[Word]]]:
    """A builtin's operands, and the values of its short options that take one (the
    letters in `with_value`; clustered `-rp VALUE` and attached `-pVALUE` too)."""
    operands: list[Word] = []
    values: dict[str, list[Word]] = {}
    index = 0
    while index < len(args):
        word, index = args[index], index + 1
        text = word.text
        if text == "--":
            operands.extend(args[index:])
            break
        if word.expands or not text.startswith("-") or text == "-":
            operands.append(word)
            continue
        for offset, letter in enumerate(text[1:], start=1):
            if letter in with_value:
                rest = text[offset + 1 :]
                value = Word(rest) if rest else (args[index] if index < len(args) else None)
                index += 0 if rest else 1
                if value is not None:
                    values.setdefault(letter, []).append(value)
                break
    return operands, values
