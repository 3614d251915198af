"""What programs carry in their arguments: commands, shell code and writes.

A rule names a program (`run_command(find:*)`), but many programs run another command,
shell code or a write that their arguments carry: `sudo rm x` (wrappers.py),
`find . -exec rm {} \\;`, `su -c 'rm x'`, `trap 'rm x' EXIT`, `sed 'w /etc/x'`,
`rg --pre ./tool`. A prefix rule authorises the program and the words it spells out,
never what it carries beyond them: the parser (shell.py) makes each carried command a
command of its own, carried shell code the commands it runs, and a carried write a write
check. What cannot be followed (`sed e`, `awk 'BEGIN { system(…) }'`,
`git -c core.pager=…`) is a problem: asked about, never allowed. Deny rules see every
carried command too, so `deny rm:*` also denies `flock LOCK rm x` and `strace rm x`.

`carried()` is the one entry point, and `_CARRIERS` with wrappers.WRAPPERS the one table.
A program in neither is judged by its name and its words alone. The cases follow Codex's
`is_safe_command.rs` and the reviews in tests/permissions/test_carried.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

from codecoder.permissions.sedscript import sed_effects
from codecoder.permissions.words import (
    Word,
    excerpt,
    has_option,
    long_option,
    operand_words,
    option_with_value,
    program_name,
)
from codecoder.permissions.wrappers import WRAPPERS, unwrap_one

UNKNOWN_FILE = Word("{}", expands=True)
"""A word a program fills in at run time (`find -exec … {}`, an `xargs` argument)."""


# --- shells and shell code --------------------------------------------------------------

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "hush", "lksh"})
"""Shells whose `-c SCRIPT` argument is parsed as nested commands."""
FOREIGN_SHELLS = frozenset(
    {"fish", "csh", "tcsh", "nu", "xonsh", "elvish", "pwsh", "powershell", "rc", "es"}
)
"""Shells with another syntax: their scripts cannot be parsed as bash."""

_SHELL_LONG_VALUES = frozenset({"--rcfile", "--init-file"})
"""Long options of bash whose value is the next word."""
_STREAM_FILES = ("/dev/", "/proc/")
"""A script read from here is made up by the line itself (`/dev/stdin`, `/dev/fd/3`)."""


class Script(NamedTuple):
    """Shell code a command runs: written out in the line (`text`), or only known at run
    time (`text` None; `origin` says where it comes from). `foreign`: the code of another
    shell, which only deny rules look into, on a best-effort split."""

    text: str | None
    origin: str = ""
    foreign: bool = False


def _shell_script(name: str, args: tuple[Word, ...]) -> Script | None:
    """The shell code a shell, `eval` or `source` runs: the SCRIPT of `sh -c SCRIPT` /
    `bash -lc -- SCRIPT`, the words of `eval`; only known at run time for `bash -c "$X"`,
    `eval "$X"`, `source <(…)`, and a shell that reads its script from standard input
    (`… | sh`). None: it runs no shell code (or a script file, which is like running any
    program)."""
    if name == "eval":
        return _eval_script(args)
    if name in (".", "source"):
        return _sourced_script(args)
    if name in SHELLS:
        return _shell_args_script(args)
    if name in FOREIGN_SHELLS:
        script = _shell_args_script(args)
        if script is not None and script.text is not None:
            return Script(None, f"`{excerpt(script.text)}` is {name} code", foreign=True)
        return script
    return None


def _eval_script(args: tuple[Word, ...]) -> Script | None:
    """eval joins its words with spaces and runs the result."""
    if args and args[0] == Word("--"):
        args = args[1:]
    if not args:
        return None
    text = " ".join(word.text for word in args)
    return Script(None, f"`{excerpt(text)}`") if any(w.expands for w in args) else Script(text)


def _sourced_script(args: tuple[Word, ...]) -> Script | None:
    if args and args[0] == Word("--"):
        args = args[1:]
    return _script_file(args[0]) if args else None


def _script_file(word: Word) -> Script | None:
    """A script file is like any program, unless the line makes up its contents
    (`<(…)`, `$F`, `/dev/stdin`)."""
    if word.expands or word.text.startswith(_STREAM_FILES):
        return Script(None, f"`{excerpt(word.text)}`")
    return None


def _shell_args_script(args: tuple[Word, ...]) -> Script | None:
    """What `sh [options] [-c] [--] [SCRIPT | FILE]` runs. `-o NAME`/`-O NAME` take a
    value; `-` or `--` end the options; with `c` among them the first word after is the
    script; else the first word is a script file, and without one (or with `-s`) the
    script is read from standard input."""
    flags = ""
    index = 0
    while index < len(args):
        text = args[index].text
        if args[index].expands:
            return Script(None, f"`{excerpt(text)}`")
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
        return Script(None, f"`{excerpt(operand.text)}`")
    if operand is None or "s" in flags:
        return Script(None, "its standard input")
    return _script_file(operand)


def _code(word: Word) -> Script:
    """A word that is shell code (`su -c WORD`, `trap WORD EXIT`)."""
    return Script(None, f"`{excerpt(word.text)}`") if word.expands else Script(word.text)


# --- what a command carries ---------------------------------------------------------------


class Carried(NamedTuple):
    """What a command runs or writes through its arguments, beyond itself."""

    start: int | None = None
    """Where the carried material begins in argv: a prefix rule that stops before it
    authorises the program, not what it carries."""
    commands: tuple[tuple[Word, ...], ...] = ()
    scripts: tuple[Script, ...] = ()
    writes: tuple[Word, ...] = ()
    reads: tuple[Word, ...] = ()
    variables: tuple[Word, ...] = ()
    """`NAME=value` words it sets for what it runs (`env NAME=value cmd`)."""
    problems: tuple[str, ...] = ()
    chdir: bool = False
    certain: bool = True


NOTHING = Carried()


def carried(argv: tuple[Word, ...]) -> Carried:
    """What `argv` carries (NOTHING for a plain program)."""
    name = program_name(argv)
    if name is None:
        return NOTHING
    script = _shell_script(name, argv[1:])
    if script is not None:
        found = Carried(start=1, scripts=(script,))
    elif name in WRAPPERS:
        return _wrapped(name, argv)
    else:
        analyse = _CARRIERS.get(name)
        found = analyse(argv) if analyse is not None else NOTHING
    if found.start == 1:
        found = found._replace(start=_carry_start(argv, found))
    return found


def _carry_start(argv: tuple[Word, ...], found: Carried) -> int:
    """The first word that holds what is carried (`sed -n -e 'e rm x'`: 3), so that a
    prefix rule spelling out only the program and its options (`sed -n:*`) covers the
    program, not the code or the file in a later word."""
    texts = [s.text for s in found.scripts if s.text] + [w.text for w in found.writes]
    texts += [w.text for w in found.reads] + [c[0].text for c in found.commands if c]
    for index, word in enumerate(argv[1:], start=1):
        if any(text and text in word.text for text in texts):
            return index
    return 1


def _wrapped(name: str, argv: tuple[Word, ...]) -> Carried:
    step = unwrap_one(argv)
    if step is None or (name == "command" and has_option(argv[1:2], "vV")):
        return NOTHING
    spec = WRAPPERS[name]
    found = [
        (index, value)
        for index in range(1, len(argv))
        for option, value in [option_with_value(argv[index].text, argv, index, tuple(spec.scripts))]
        if option and value is not None
    ]
    scripts = tuple(_code(word) for _, word in found)
    start = min((index for index, _ in found), default=step.start)
    commands: tuple[tuple[Word, ...], ...] = (step.argv,) if step.argv and not scripts else ()
    writes = step.writes
    if name == "strace":  # `-o '|cmd'` and `-o '!cmd'` pipe the trace into cmd
        scripts += tuple(_code(Word(w.text[1:], w.expands)) for w in writes if w.text[:1] in "|!")
        writes = tuple(w for w in writes if w.text[:1] not in "|!")
    problems: tuple[str, ...] = ()
    if name == "xargs" and commands:
        commands, problems = _xargs(argv, step.argv)
    elif name == "sg" and commands:  # `sg GROUP 'cmd args'`: a string for `sh -c`
        scripts, commands = (Script(" ".join(w.text for w in step.argv)),), ()
        if any(w.expands for w in step.argv):
            scripts = (Script(None, "`sg` of words known at run time"),)
    elif name in ("su", "runuser") and not scripts and not (name == "runuser" and commands):
        commands, problems = (), (f"`{name}` starts a shell that reads its standard input",)
    if not commands and not scripts and not writes and not problems:
        return NOTHING
    return Carried(
        start=start,
        commands=commands,
        scripts=scripts,
        writes=writes,
        variables=step.variables,
        problems=problems,
        chdir=step.chdir,
        certain=step.certain,
    )


def _xargs(
    argv: tuple[Word, ...], nested: tuple[Word, ...]
) -> tuple[tuple[tuple[Word, ...], ...], tuple[str, ...]]:
    """xargs appends words from its input to the command, or puts them where `-I STR`
    says: those words are only known at run time, and inside a shell script they are
    code."""
    replace = _xargs_replacement(argv)
    if replace is None:
        return ((*nested, UNKNOWN_FILE),), ()
    words = tuple(Word(w.text, expands=True) if replace in w.text else w for w in nested)
    inner = program_name(nested)
    if inner in SHELLS and any(replace in w.text for w in nested[1:]):
        return (), ("`xargs -I` puts its input into shell code",)
    return (words,), ()


def _xargs_replacement(argv: tuple[Word, ...]) -> str | None:
    for index, word in enumerate(argv[1:], start=1):
        text = word.text
        if text == "-I" and index + 1 < len(argv):
            return argv[index + 1].text
        if text.startswith("-I") and len(text) > 2:
            return text[2:]
        if text in ("-i", "--replace"):
            return "{}"
        if text.startswith(("-i", "--replace=")):
            return text.split("=", 1)[1] if "=" in text else text[2:]
    return None


FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_FIND_OPTIONS = frozenset({"-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3"})


def _find(argv: tuple[Word, ...]) -> Carried:
    roots = find_roots(argv)
    commands: list[tuple[Word, ...]] = []
    writes: list[Word] = []
    start: int | None = None
    index = 1
    while index < len(argv):
        text = argv[index].text
        if text in FIND_EXEC:
            start = index if start is None else start
            end = index + 1
            while end < len(argv) and argv[end].text not in (";", "+"):
                end += 1
            nested = tuple(UNKNOWN_FILE if "{}" in w.text else w for w in argv[index + 1 : end])
            if nested:
                commands.append(nested)
            index = end + 1
            continue
        if text in FIND_WRITES and index + 1 < len(argv):
            start = index if start is None else start
            writes.append(argv[index + 1])
            index += 2
            continue
        if text == "-delete":  # `-files0-from F`: its starting points are in F
            start = index if start is None else start
            unknown = any(w.text == "-files0-from" for w in argv)
            writes.extend((UNKNOWN_FILE,) if unknown else roots or (Word("."),))
        index += 1
    if start is None:
        return NOTHING
    return Carried(start=start, commands=tuple(commands), writes=tuple(writes))


def find_roots(argv: tuple[Word, ...]) -> tuple[Word, ...]:
    """The folders `find` searches: the words before its first expression (`--` ends
    find's own options and is no expression)."""
    roots: list[Word] = []
    for word in argv[1:]:
        text = word.text
        if text in _FIND_OPTIONS or text.startswith("-D") or text == "--":
            continue
        if text.startswith(("-", "(", "!", ")")) and not word.expands:
            break
        roots.append(word)
    return tuple(roots)


# ripgrep ------------------------------------------------------------------------------------

_DECOMPRESSORS = (
    ("gzip", "-d", "-c"),
    ("bzip2", "-d", "-c"),
    ("xz", "-d", "-c"),
    ("lz4", "-d", "-c"),
    ("zstd", "-q", "-d", "-c"),
    ("brotli", "-d", "-c"),
    ("uncompress", "-c"),
)
"""What `rg -z` runs on compressed files."""
_RG_PROGRAMS = ("--pre", "--hostname-bin")


def _ripgrep(argv: tuple[Word, ...]) -> Carried:
    commands: list[tuple[Word, ...]] = []
    reads: list[Word] = []
    start: int | None = None
    for index, word in enumerate(argv[1:], start=1):
        text = word.text
        if text == "--":
            break
        option, value = option_with_value(text, argv, index, (*_RG_PROGRAMS, "--ignore-file"))
        if option == "--ignore-file" and value is not None:
            start = index if start is None else start
            reads.append(value)
        elif option and value is not None:
            start = index if start is None else start
            commands.append((value, UNKNOWN_FILE) if option == "--pre" else (value,))
        elif long_option(text, "--search-zip") or (
            text.startswith("-") and not text.startswith("--") and "z" in text[1:]
        ):
            start = index if start is None else start
            commands.extend((*(Word(w) for w in d), UNKNOWN_FILE) for d in _DECOMPRESSORS)
    if start is None:
        return NOTHING
    return Carried(start=start, commands=tuple(commands), reads=tuple(reads))


# sed and awk --------------------------------------------------------------------------------

_SED_LONG_VALUES = ("--expression", "--file", "--line-length")


def _sed(argv: tuple[Word, ...]) -> Carried:
    args = argv[1:]
    scripts, operands, problems = sed_scripts(args)
    writes: list[Word] = []
    reads: list[Word] = []
    code: list[Script] = []
    for script in scripts:
        if script.expands:
            problems.append(f"its sed script `{excerpt(script.text)}` is only known at run time")
            continue
        effects = sed_effects(script.text)
        if not effects.readable:
            problems.append(f"cannot read its sed script `{excerpt(script.text)}`")
        if effects.runs_input:
            problems.append("its sed script runs text from the input as a command (`e`)")
        writes.extend(Word(path) for path in effects.writes)
        reads.extend(Word(path) for path in effects.reads)
        code.extend(Script(text) for text in effects.scripts)
    if has_option(args, "i", ("--in-place",)):
        writes.extend(operands)
    if any(long_option(w.text, "--follow-symlinks") for w in args) and writes:
        problems.append("it writes through links (--follow-symlinks)")
    if not (writes or reads or code or problems):
        return NOTHING
    return Carried(
        start=1,
        scripts=tuple(code),
        writes=tuple(writes),
        reads=tuple(reads),
        problems=tuple(problems),
    )


def sed_scripts(args: tuple[Word, ...]) -> tuple[list[Word], list[Word], list[str]]:
    """sed's scripts (`-e S`, `--expression=S`, else its first operand), its file
    operands, and what cannot be read (`-f FILE`: a script in a file)."""
    scripts: list[Word] = []
    problems: list[str] = []
    operands: list[Word] = []
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
        option, value, index = _sed_option(text, args, index)
        if option == "e" and value is not None:
            scripts.append(value)
        elif option == "f":
            problems.append("it reads its sed script from a file")
    if not scripts and not problems and operands:
        scripts.append(operands.pop(0))
    return scripts, operands, problems


def _sed_option(text: str, args: tuple[Word, ...], index: int) -> tuple[str, Word | None, int]:
    """The option at `text` as `e` (a script), `f` (a script file) or "" (anything
    else), its value, and the index after it."""
    if text.startswith("--"):
        option = next((o for o in _SED_LONG_VALUES if long_option(text, o)), None)
        if option is None:
            return "", None, index
        if "=" in text:
            value: Word | None = Word(text.split("=", 1)[1])
        else:
            value, index = (args[index] if index < len(args) else None), index + 1
        letter = {"--expression": "e", "--file": "f"}.get(option, "")
        return letter, value, index
    for offset, letter in enumerate(text[1:], start=1):
        if letter == "i":  # `-i[SUFFIX]`: the rest is the suffix
            return "", None, index
        if letter in "efl":
            rest = text[offset + 1 :]
            if rest:
                return letter, Word(rest), index
            value = args[index] if index < len(args) else None
            return letter, value, index + 1
    return "", None, index


_AWKS = ("awk", "gawk", "mawk", "nawk", "busybox-awk")
_AWK_RUNS = re.compile(r"\bsystem\s*\(|(?<!\|)\|(?!\|)|@load|@include")
_AWK_WRITES = re.compile(r"\bprintf?\b[^{}\n]*>")
_AWK_READS = re.compile(r"\bgetline\b[^;{}\n]*<")
_AWK_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_AWK_BRACE_IN_REGEX = re.compile(r"/[^/\n]*[{}][^/\n]*/")
_AWK_VALUES = frozenset({"-F", "-v", "-f", "-i", "-l", "-E", "--file", "--include", "--load"})


def _awk(argv: tuple[Word, ...]) -> Carried:
    args = argv[1:]
    if has_option(args, "", ("--file", "--include", "--load", "--exec")) or any(
        w.text in ("-f", "-i", "-l", "-E") or w.text.startswith(("-f", "-i", "-l", "-E"))
        for w in args
    ):
        return Carried(start=1, problems=("awk runs a program from a file",))
    operands = operand_words(args, _AWK_VALUES)
    if not operands:
        return NOTHING
    program = operands[0]
    if program.expands:
        return Carried(start=1, problems=("its awk program is only known at run time",))
    text = _awk_code(program.text)
    if text is None:
        return Carried(start=1, problems=("cannot read its awk program",))
    if _AWK_RUNS.search(text):
        return Carried(start=1, problems=("its awk program runs commands",))
    if _AWK_WRITES.search(text):
        return Carried(start=1, problems=("its awk program writes files",))
    if _AWK_READS.search(text):
        return Carried(start=1, problems=("its awk program reads files it names",))
    return NOTHING


def _awk_code(program: str) -> str | None:
    """The program as the scans above read it: its continued lines joined, its strings
    emptied (a `}` or `>` in `"…"` ends no statement and redirects nothing), and no brace
    at all if one may sit in a regex (`/}/`), so that nothing ends a scan early. None
    (not known) when a string does not end."""
    text = _AWK_STRING.sub('""', program.replace("\\\n", " "))
    if '"' in text.replace('""', ""):
        return None
    if _AWK_BRACE_IN_REGEX.search(text):
        text = text.replace("{", " ").replace("}", " ")
    return text


# git ----------------------------------------------------------------------------------------

_GIT_GLOBAL_VALUES = frozenset(
    {"-C", "-c", "--config-env", "--git-dir", "--work-tree", "--namespace", "--exec-path"}
    | {"--super-prefix", "--attr-source", "--list-cmds"}
)
_GIT_PROGRAM_KEYS = re.compile(
    r"(^|\.)[a-z0-9-]*(pager|editor|fsmonitor|command|cmd|program|helper|filter|hook|driver"
    r"|clean|smudge|process|textconv|external|askpass|proxy|path|dir|pack|tool|browser|server"
    r"|allow)[a-z0-9-]*$"
    r"|^(alias|pager|include|includeif|filter|diff|merge|credential|gpg|protocol|url"
    r"|core\.worktree)\b",
    re.IGNORECASE,
)
"""Config keys whose value is a program git runs, or a file of more config: setting one
carries a command."""
_GIT_SCRIPT_OPTIONS = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "mergetool": ("--tool",),
}
_GIT_PROBLEM_OPTIONS = (
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--template",
    "--open-files-in-pager",
    "--config",
)
_GIT_FETCHERS = frozenset({"clone", "fetch", "pull", "ls-remote", "archive", "submodule"})


def git_parts(argv: Sequence[Word]) -> tuple[list[Word], Word | None, list[Word]]:
    """git's global options, its subcommand and the subcommand's arguments."""
    args = list(argv[1:])
    index = 0
    while index < len(args):
        text = args[index].text
        if args[index].expands or not text.startswith("-"):
            break
        index += 2 if text in _GIT_GLOBAL_VALUES else 1
    sub = args[index] if index < len(args) else None
    return args[:index], sub, args[index + 1 :]


def _git(argv: tuple[Word, ...]) -> Carried:
    options, sub, args = git_parts(argv)
    problems: list[str] = []
    writes: list[Word] = []
    scripts: list[Script] = []
    commands: list[tuple[Word, ...]] = []
    _git_settings(options, problems, scripts, commands)
    name = sub.text if sub is not None and not sub.expands else ""
    if name == "config":
        problems.append(_git_config_problem(args))
    for index, word in enumerate(args):
        text = word.text
        option, _, attached = text.partition("=")
        value = Word(attached) if attached else (args[index + 1] if index + 1 < len(args) else None)
        if value is not None and _git_writes(name, text):
            writes.append(value)
        elif _gives(text, _GIT_SCRIPT_OPTIONS.get(name, ())) and value is not None:
            scripts.append(_code(value))
        elif _gives(text, _GIT_PROBLEM_OPTIONS) or _git_runs(name, text):
            problems.append(f"`git {name} {option}` runs a program the check cannot follow")
        elif name == "clone" and option == "-c" and value is not None:
            _git_settings([Word("-c"), value], problems, scripts, commands)
    if name == "bundle" and len(args) > 1 and args[0].text == "create":
        writes.append(args[1])
    if name == "bisect" and args and args[0].text == "run" and len(args) > 1:
        commands.append(tuple(args[1:]))
    if name == "submodule" and args and args[0].text == "foreach" and len(args) > 1:
        scripts.append(Script(" ".join(w.text for w in args[1:])))
    if name == "filter-branch":
        problems.append("`git filter-branch` runs filters the check cannot follow")
    found = [p for p in problems if p]
    if not (found or writes or scripts or commands):
        return NOTHING
    return Carried(
        start=1,
        commands=tuple(commands),
        scripts=tuple(scripts),
        writes=tuple(writes),
        problems=tuple(found),
    )


def _git_writes(subcommand: str, text: str) -> bool:
    """Options whose value is a file git writes: `--output` (log, diff, show, archive),
    format-patch's folder, `config --file`, `archive -o`."""
    if long_option(text, "--output"):
        return True
    name = text.split("=", 1)[0]
    if subcommand == "format-patch":
        return name == "-o" or long_option(text, "--output-directory")
    if subcommand == "archive":
        return name == "-o"
    if subcommand == "config":
        return name == "-f" or long_option(text, "--file")
    return False


_GIT_SCRIPT_KEYS = re.compile(
    r"(^|\.)(pager|editor|fsmonitor|sshcommand|external|textconv|askpass|command|cmd"
    r"|clean|smudge|process|driver|difffilter)$|^pager\.",
    re.IGNORECASE,
)
"""Config keys whose value is a command line git runs through the shell."""


def _git_settings(
    options: Sequence[Word],
    problems: list[str],
    scripts: list[Script],
    commands: list[tuple[Word, ...]],
) -> None:
    """git's global options: `-c KEY=VALUE` whose value is a command is carried shell
    code (checked as the commands it holds), an alias a carried git command or shell
    code (`!cmd`); another key that runs or loads something, `--exec-path`, `--git-dir`
    and the like are problems."""
    for index, word in enumerate(options):
        text = word.text
        option, _, attached = text.partition("=")
        following = options[index + 1].text if index + 1 < len(options) else ""
        value = attached or following
        if word.expands:
            problems.append("a git option is only known at run time")
        elif option == "-c" or long_option(text, "--config-env"):
            key, _, setting = value.partition("=")
            if key.lower().startswith("alias."):
                if setting.startswith("!"):
                    scripts.append(Script(setting[1:]))
                else:
                    commands.append((Word("git"), *(Word(w) for w in setting.split())))
            elif _GIT_SCRIPT_KEYS.search(key) and option == "-c":
                scripts.append(Script(setting))
            elif _GIT_PROGRAM_KEYS.search(key):
                problems.append(f"`git -c {key}=…` sets a program or a file git uses")
        elif long_option(text, "--exec-path") and value:
            problems.append("`git --exec-path` runs git commands from another folder")
        elif long_option(text, "--git-dir") and value.rstrip("/") != ".git":
            problems.append(
                "`git --git-dir` may take config and hooks from a folder the agent wrote"
            )
        elif long_option(text, "--work-tree") or long_option(text, "--namespace"):
            problems.append("`git --work-tree` runs git on another work tree")


def _gives(text: str, options: Sequence[str]) -> bool:
    """Whether the word gives one of `options` (long ones also abbreviated)."""
    name = text.split("=", 1)[0]
    return any(name == o or (o.startswith("--") and long_option(text, o)) for o in options)


def _git_runs(subcommand: str, text: str) -> bool:
    """Short options and URLs through which git runs a program: `grep -O[CMD]`, the
    `-u`/`--upload-pack` of fetching commands, and `ext::` transports."""
    if "ext::" in text:
        return True
    if subcommand == "grep" and text.startswith("-O"):
        return True
    return subcommand in _GIT_FETCHERS and text.startswith("-u") and not text.startswith("--")


def _git_config_problem(args: list[Word]) -> str:
    for word in args:
        if word.expands:
            return "`git config` with a key only known at run time"
        if not word.text.startswith("-") and _GIT_PROGRAM_KEYS.search(word.text):
            return f"`git config {word.text}` sets a program git runs"
    return ""


# programs that write, or run shell code, through an option ----------------------------------

Given = list[tuple[str, Word]]
"""The options that took a value, each with its value, in the order given."""


def _read_options(
    args: Sequence[Word],
    values: Collection[str],
    detached: Collection[str] = (),
    whole_words: bool = False,
) -> tuple[Given, list[Word]]:
    """The options of `args` among `values` (those whose value is the next word unless
    attached), each with its value, and the operands. Options are read as the program's
    parser reads them: by getopt, a long one also abbreviated (`--outp=F`), a short one
    also in a cluster (`-uoF`, `-uo F`), a two-letter one of zip too (`-qTT cmd`,
    `-TT=cmd`); a `detached` short one takes the next word whatever follows it in the
    cluster (zstd's `-of F` writes F); with `whole_words`, an option is a whole word
    after one dash or two (`-out F`, `-out=F`, `--out F`: openssl, xxd)."""
    given: Given = []
    operands: list[Word] = []
    index = 0
    while index < len(args):
        word = args[index]
        following = args[index + 1] if index + 1 < len(args) else None
        index += 1
        if word.text == "--":
            operands.extend(args[index:])
            break
        if not word.text.startswith("-") or word.text == "-":
            operands.append(word)
            continue
        option, value = _option(word, following, values, detached, whole_words)
        if option and value is not None:
            given.append((option, value))
            index += value is following
    return given, operands


def _option(
    word: Word,
    following: Word | None,
    values: Collection[str],
    detached: Collection[str],
    whole_words: bool,
) -> tuple[str, Word | None]:
    text = word.text
    name, equals, attached = text.partition("=")
    if whole_words:
        name = "-" + name.lstrip("-")
        if name not in values:
            return "", None
        return name, Word(attached, word.expands) if equals else following
    if text.startswith("--"):  # an exact name wins over one it abbreviates (`--file`)
        option = name if name in values else None
        option = option or next(
            (o for o in values if o.startswith("--") and long_option(text, o)), None
        )
        return (
            (option, Word(attached, word.expands) if equals else following)
            if option
            else ("", None)
        )
    for offset in range(1, len(text)):
        pair = f"-{text[offset : offset + 2]}"
        if len(pair) == 3 and pair in values:
            rest = text[offset + 2 :].removeprefix("=")
            return pair, Word(rest, word.expands) if rest else following
        option = f"-{text[offset]}"
        if option in values:
            rest = text[offset + 1 :]
            if rest and option not in detached:
                return option, Word(rest, word.expands)
            return option, following
    return "", None


def _options_carrier(
    *,
    writes: Sequence[str] = (),
    scripts: Sequence[str] = (),
    problems: Sequence[str] = (),
    takes_value: Sequence[str] = (),
    outputs: Callable[[Given, list[Word], Sequence[Word]], list[Word]] | None = None,
    detached: Sequence[str] = (),
    whole_words: bool = False,
    old_style: bool = False,
) -> Callable[[tuple[Word, ...]], Carried]:
    """A carrier described by its options: `writes` take a file (or a folder) it writes,
    `scripts` shell code, `problems` make it uncheckable, `takes_value` are the others
    whose value is the next word (so that operands are counted right); `outputs` picks
    further files it writes from its options, operands and words (`uniq IN OUT`). With
    `old_style`, a first word without a dash is a cluster of short options whose values
    are the next words (tar's `tar cIf PROG a.tar`). How options are read:
    `_read_options`."""
    values = frozenset((*writes, *scripts, *takes_value))

    def analyse(argv: tuple[Word, ...]) -> Carried:
        args = argv[1:]
        if old_style and args and not args[0].text.startswith("-"):
            if args[0].expands:
                return Carried(start=1, problems=("its options are only known at run time",))
            args = _old_style_options(args, values)
        given, operands = _read_options(args, values, detached, whole_words)
        found_problems = [
            f"`{excerpt(w.text)}` runs a program the check cannot follow"
            for w in args
            if _gives_problem(w.text, problems, whole_words)
        ]
        found_writes = [value for option, value in given if option in writes]
        found_scripts = [_code(value) for option, value in given if option in scripts]
        if outputs is not None:
            found_writes.extend(outputs(given, operands, args))
        if not (found_writes or found_scripts or found_problems):
            return NOTHING
        return Carried(
            start=1,
            scripts=tuple(found_scripts),
            writes=tuple(found_writes),
            problems=tuple(found_problems),
        )

    return analyse


def _old_style_options(args: Sequence[Word], values: Collection[str]) -> tuple[Word, ...]:
    """`cIf PROG a.tar f` as `-c -I PROG -f a.tar f`: each letter of the first word is an
    option, and those that take a value take the next words in turn (GNU tar's old
    style)."""
    rest = list(args[1:])
    words: list[Word] = []
    for letter in args[0].text:
        words.append(Word(f"-{letter}"))
        if f"-{letter}" in values and rest:
            words.append(rest.pop(0))
    return (*words, *rest)


def _gives_problem(text: str, problems: Sequence[str], whole_words: bool = False) -> bool:
    """A long option (also abbreviated: `--use-compress`), a short one also inside a
    cluster (`-cvIcmd`), or a word starting with a given prefix (`-oProxyCommand`); with
    `whole_words`, the option's whole name (`-engine`, `--engine=x`)."""
    if whole_words:
        return "-" + text.partition("=")[0].lstrip("-") in problems
    if text.startswith("--"):
        return any(o.startswith("--") and long_option(text, o) for o in problems)
    if text.startswith("-") and len(text) > 1:
        letters = {o[1] for o in problems if len(o) == 2}
        return bool(letters & set(text[1:])) or any(text.startswith(o) for o in problems)
    return False


def _after_first(_given: Given, operands: list[Word], _args: Sequence[Word]) -> list[Word]:
    """The operands after the first: the output of `uniq IN OUT`, `xxd IN OUT`,
    `lz4 IN OUT`, the prefix of `split IN PREFIX` (any further one too, so that an option
    value mistaken for an operand cannot hide the output)."""
    return operands[1:]


def _all_operands(_given: Given, operands: list[Word], _args: Sequence[Word]) -> list[Word]:
    return operands


def _patched_files(_given: Given, _operands: list[Word], args: Sequence[Word]) -> list[Word]:
    """Without `-o FILE`, patch writes (and creates, executable too) the files its patch
    names, which the line does not show: a write of a file only known at run time,
    unless it only tries (`--dry-run`)."""
    if any(_gives_problem(w.text, ("-o", "--output", "--dry-run")) for w in args):
        return []
    return [UNKNOWN_FILE]


def _csplit_files(given: Given, _operands: list[Word], _args: Sequence[Word]) -> list[Word]:
    """csplit writes PREFIX followed by its suffix format, which may hold a `/`
    (`-b '/../../x%02d'`)."""
    found = dict(given)
    prefix = found.get("-f") or found.get("--prefix") or Word("xx")
    suffix = found.get("-b") or found.get("--suffix-format")
    if suffix is None:
        return []
    return [Word(prefix.text + suffix.text, prefix.expands or suffix.expands)]


_TAR_ARCHIVE_WRITERS = (
    *("-c", "-r", "-u", "-A", "--create", "--append", "--update", "--catenate"),
    *("--concatenate", "--delete"),
)


def _tar_archive(given: Given, _operands: list[Word], args: Sequence[Word]) -> list[Word]:
    """The archive (`-f FILE`) of a tar that creates or changes one: a write (not `-`,
    its standard output). A letter of these anywhere in a cluster counts (`-xfc.tar`
    too): a write more to check at worst."""
    if not any(_gives_problem(w.text, _TAR_ARCHIVE_WRITERS) for w in args):
        return []
    return [value for option, value in given if option in ("-f", "--file") and value.text != "-"]


_MAKE_ASSIGNMENT = re.compile(r"^\s*(.*?)\s*(::?=|:::=|\?=|\+=|!=|=)", re.DOTALL)
"""An operand with an `=` is a variable assignment to make; blanks around the name are
not part of it (`' SHELL=x'` sets SHELL)."""
_MAKE_SPECIAL = frozenset(
    {"SHELL", ".SHELLFLAGS", "MAKESHELL", "MAKEFILES", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS"}
)
"""Variables that change how make runs every recipe or what it reads."""


def _make(argv: tuple[Word, ...]) -> Carried:
    """make runs the recipes of its makefile (which a rule for make authorises); the line
    carries more through `--eval`/`-E` (makefile text), a makefile read from standard input
    (`-f -`), and a variable assignment make evaluates by itself: `X:=$(shell …)` is
    expanded at once, `X!=cmd` runs cmd, `SHELL=…` runs every recipe, `MAKEFLAGS=--eval=…`.
    make expands the name too (`$(shell cmd)x=1`); a blank in it may be a modifier
    (`override X`)."""
    found = _MAKE_OPTIONS(argv)
    given, operands = _read_options(argv[1:], _MAKE_VALUES)
    problems = list(found.problems)
    makefiles = [v for o, v in given if o in ("-f", "--file", "--makefile")]
    if any(v.text == "-" or _script_file(v) for v in makefiles):
        problems.append("make reads a makefile the line makes up")
    for word in operands:
        match = _MAKE_ASSIGNMENT.match(word.text)
        if match is None:
            continue
        name, operator = match.groups()
        odd = "$" in word.text or any(c.isspace() for c in name)
        if word.expands or odd or operator == "!=" or name in _MAKE_SPECIAL:
            problems.append(f"`make {excerpt(word.text)}` sets make code the check cannot follow")
    return Carried(start=1, problems=tuple(problems)) if problems else NOTHING


_MAKE_VALUES = frozenset(
    {"-C", "-f", "-I", "-o", "-W", "-E", "--directory", "--file", "--makefile"}
    | {"--include-dir", "--old-file", "--assume-old", "--what-if", "--new-file", "--assume-new"}
    | {"--eval", "--jobserver-style"}
)
_MAKE_OPTIONS = _options_carrier(problems=("-E", "--eval"))


def _openssl(argv: tuple[Word, ...]) -> Carried:
    """openssl's options name the files it writes (`-out`, `-keyout` …) or load code
    (`-engine`, `-provider`, a `-config` that loads either); `openssl rehash DIR` writes
    links into DIR."""
    found = _OPENSSL_OPTIONS(argv)
    _, operands = _read_options(argv[1:], (), whole_words=True)
    if operands and operands[0].text == "rehash" and len(operands) > 1:
        found = found._replace(start=1, writes=(*found.writes, *operands[1:]))
    return found


_OPENSSL_OPTIONS = _options_carrier(
    writes=(
        *("-out", "-keyout", "-outdir", "-sess_out", "-keylogfile", "-msgfile", "-writerand"),
        *("-CAserial", "-signer", "-certsout", "-cacertsout", "-certout", "-chainout"),
        *("-extracertsout", "-reqout", "-respout", "-rspout", "-srpvfile"),
    ),
    problems=(
        *("-engine", "-keygen_engine", "-ssl_client_engine", "-provider", "-provider-path"),
        *("-provider_name", "-config", "-pre", "-post"),
    ),
    whole_words=True,
)


_SSH_KEYS = re.compile(
    r"proxycommand|localcommand|knownhostscommand|userknownhostsfile|controlpath"
    r"|pkcs11provider|securitykeyprovider|^include|^match",
    re.IGNORECASE,
)
"""`-o` keywords that run a local command, load a library or name a file ssh writes."""
_SSH_VALUES = {
    "ssh": "BbcDEeFIiJLlmOoPpQRSWw",
    "scp": "cDFiJlOoPSX",
    "sftp": "BbcDFiJlOoPRSsX",
}
"""The short options of each program that take a value."""
_SSH_PROBLEMS = {"ssh": "EFIS", "scp": "DFS", "sftp": "bDFSs"}
"""Options that name a config file (which may set a command), a program to run, a
batch file (sftp's `!cmd` runs locally), a library (`-I`), a socket or a log it writes."""


def _ssh(argv: tuple[Word, ...]) -> Carried:
    """ssh, scp and sftp: their options read by getopt (so `-vF cfg` is `-F cfg`)."""
    name = program_name(argv) or ""
    values = {f"-{letter}" for letter in _SSH_VALUES[name]}
    given, _ = _read_options(argv[1:], values)
    risky = {f"-{letter}" for letter in _SSH_PROBLEMS[name]}
    if any(o in risky or (o == "-o" and _SSH_KEYS.search(v.text)) for o, v in given):
        return Carried(
            start=1, problems=("its options run a local command the check cannot follow",)
        )
    return NOTHING


def _trap(argv: tuple[Word, ...]) -> Carried:
    """`trap ACTION SIGNAL…` runs ACTION later; one operand (or `-`) resets."""
    args = list(argv[1:])
    if args and args[0].text in ("-p", "-l", "-P"):
        return NOTHING
    if args and args[0].text == "--":
        args = args[1:]
    if len(args) < 2 or args[0].text in ("-", ""):
        return NOTHING
    return Carried(start=1, scripts=(_code(args[0]),))


def _watch(argv: tuple[Word, ...]) -> Carried:
    """watch runs its words through `sh -c`, joined by spaces (with -x/--exec as argv)."""
    args = argv[1:]
    exec_form = has_option(args, "x", ("--exec",))
    operands = operand_words(args, ("-n", "--interval"))  # -d takes an attached value only
    if not operands:
        return NOTHING
    start = len(argv) - len(operands)
    if exec_form:
        return Carried(start=start, commands=(tuple(operands),))
    if any(word.expands for word in operands):
        return Carried(start=start, scripts=(Script(None, "`watch` of words known at run time"),))
    return Carried(start=start, scripts=(Script(" ".join(w.text for w in operands)),))


def _script_program(argv: tuple[Word, ...]) -> Carried:
    """`script [-c CMD] [FILE]`: runs CMD (without it, a shell reading its input) and
    writes the typescript to FILE and its logs where `-O`, `-I`, `-B`, `-T` say."""
    given, operands = _read_options(argv[1:], _SCRIPT_VALUES)
    commands = [value for option, value in given if option in ("-c", "--command")]
    writes = (*operands[:1], *(value for option, value in given if option in _SCRIPT_LOGS))
    if not commands:
        return Carried(
            start=1, writes=writes, problems=("`script` starts a shell that reads its input",)
        )
    return Carried(start=1, scripts=tuple(_code(w) for w in commands), writes=writes)


_SCRIPT_LOGS = frozenset(
    {"-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T", "--log-timing"}
)
_SCRIPT_VALUES = _SCRIPT_LOGS | {"-c", "--command", "-E", "--echo", "-m", "--logging-format"}


def _alias(argv: tuple[Word, ...]) -> Carried:
    """`alias NAME=VALUE` makes NAME run VALUE in later lines (aliases are expanded in
    POSIX mode): VALUE is checked as the code it is."""
    scripts = []
    for word in argv[1:]:
        if word.expands:
            scripts.append(Script(None, f"`{excerpt(word.text)}`"))
        elif "=" in word.text and not word.text.startswith("-"):
            scripts.append(Script(word.text.split("=", 1)[1]))
    return Carried(start=1, scripts=tuple(scripts)) if scripts else NOTHING


def _always(problem: str, option: str = "") -> Callable[[tuple[Word, ...]], Carried]:
    """A program that is a problem (with `option` given, when that option is there)."""

    def analyse(argv: tuple[Word, ...]) -> Carried:
        if option and not any(w.text.startswith(option) for w in argv[1:]):
            return NOTHING
        return Carried(start=1, problems=(problem,))

    return analyse


def _dd(argv: tuple[Word, ...]) -> Carried:
    writes = tuple(Word(w.text[3:]) for w in argv[1:] if w.text.startswith("of=") and not w.expands)
    unknown = any(w.expands and "of=" in w.text for w in argv[1:])
    if unknown:
        return Carried(start=1, problems=("`dd of=…` writes a file only known at run time",))
    return Carried(start=1, writes=writes) if writes else NOTHING


_CARRIERS: dict[str, Callable[[tuple[Word, ...]], Carried]] = {
    "find": _find,
    "rg": _ripgrep,
    "sed": _sed,
    "gsed": _sed,
    **dict.fromkeys(_AWKS, _awk),
    "git": _git,
    "trap": _trap,
    "watch": _watch,
    "script": _script_program,
    "parallel": _always("`parallel` fills its input into shell code"),
    "alias": _alias,
    "dd": _dd,
    "tee": _options_carrier(outputs=_all_operands),  # `--output-error[=MODE]`: attached only
    "sort": _options_carrier(
        writes=("-o", "--output", "-T", "--temporary-directory"),  # -T: its temporary files
        problems=("--compress-program",),
        takes_value=(
            *("-k", "--key", "-t", "--field-separator", "-S", "--buffer-size", "--batch-size"),
            *("--files0-from", "--random-source", "--parallel", "--sort"),
        ),
    ),
    "uniq": _options_carrier(
        outputs=_after_first,
        takes_value=("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"),
    ),
    "xxd": _options_carrier(  # `-c8` is attached, `-c 8` and `-cols 8` are not
        outputs=_after_first,
        takes_value=(
            *("-c", "-cols", "-g", "-groupsize", "-l", "-len", "-n", "-name", "-o", "-offset"),
            *("-s", "-seek", "-skip"),
        ),
        whole_words=True,
    ),
    "tree": _options_carrier(writes=("-o",), problems=("-R",)),  # -R: 00Tree.html everywhere
    "base64": _options_carrier(writes=("-o", "--output")),  # macOS and BSD
    "iconv": _options_carrier(writes=("-o", "--output")),
    "gpg": _options_carrier(
        writes=(
            *("-o", "--output", "--log-file", "--logger-file", "--status-file"),
            *("--attribute-file", "--homedir", "--keyring", "--secret-keyring"),
            *("--primary-keyring", "--trustdb-name"),
        ),
        problems=(
            *("--exec-path", "--photo-viewer", "--agent-program", "--dirmngr-program"),
            *("--keyboxd-program", "--options", "--load-extension", "--use-embedded-filename"),
        ),
    ),
    "patch": _options_carrier(
        writes=(
            *("-o", "--output", "-r", "--reject-file", "-d", "--directory", "-B", "--prefix"),
            *("-Y", "--basename-prefix"),
        ),
        outputs=_patched_files,
    ),
    "unzip": _options_carrier(writes=("-d",), takes_value=("-P", "-I", "-O")),
    **dict.fromkeys(  # the folder an option names; install -s runs --strip-program
        ("cp", "mv", "install", "ln"),
        _options_carrier(writes=("-t", "--target-directory"), problems=("--strip-program",)),
    ),
    "zstd": _options_carrier(
        writes=("-o", "--output-dir-flat", "--output-dir-mirror", "--trace"), detached=("-o",)
    ),
    "brotli": _options_carrier(writes=("-o", "--output")),
    "lz4": _options_carrier(outputs=_after_first),
    "split": _options_carrier(
        scripts=("--filter",),
        takes_value=(
            *("-a", "-b", "-C", "-l", "-n", "-t", "-p", "--suffix-length", "--bytes"),
            *("--line-bytes", "--lines", "--number", "--separator", "--additional-suffix"),
        ),
        outputs=_after_first,
    ),
    "csplit": _options_carrier(
        writes=("-f", "--prefix"),
        takes_value=("-b", "--suffix-format", "-n", "--digits"),
        outputs=_csplit_files,
    ),
    "openssl": _openssl,
    "make": _make,
    "curl": _options_carrier(
        writes=(
            *("-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace"),
            *("--trace-ascii", "--stderr", "--output-dir", "--libcurl", "--etag-save"),
            *("--hsts", "--alt-svc"),
        ),
        problems=("-K", "--config"),
    ),
    "wget": _options_carrier(
        writes=(
            *("-O", "--output-document", "-o", "--output-file", "-a", "--append-output"),
            *("-P", "--directory-prefix", "--save-cookies", "--warc-file", "--hsts-file"),
            "--rejected-log",
        ),
        problems=("-e", "--execute", "--config", "--use-askpass"),
    ),
    "tar": _options_carrier(  # -C: the folder it extracts into (or reads from)
        writes=("--index-file", "-g", "--listed-incremental", "--volno-file", "-C", "--directory"),
        scripts=("--to-command", "-F", "--info-script", "--new-volume-script", "--rsh-command"),
        problems=("-I", "--use-compress-program", "--checkpoint-action", "--rmt-command"),
        takes_value=(
            *("-f", "--file", "-I", "-T", "--files-from", "-X", "--exclude-from", "-L"),
            *("--tape-length", "-b", "--blocking-factor", "-H", "--format", "-V", "--label"),
            *("-K", "--starting-file", "-N", "--newer", "--after-date"),
        ),
        outputs=_tar_archive,
        old_style=True,
    ),
    "zip": _options_carrier(
        writes=("-O", "--output-file", "-lf", "--logfile-path", "-b", "--temp-path"),
        scripts=("-TT", "--unzip-command"),
    ),
    "rsync": _options_carrier(
        writes=(
            *("--log-file", "--write-batch", "--only-write-batch", "--backup-dir"),
            *("-T", "--temp-dir", "--partial-dir"),
        ),
        scripts=("-e", "--rsh"),
        problems=("--rsync-path",),
    ),
    "ssh": _ssh,
    "scp": _ssh,
    "sftp": _ssh,
    "man": _options_carrier(
        scripts=("-P", "--pager"), problems=("-H", "--html", "-C", "--config-file")
    ),
    "nix-shell": _options_carrier(scripts=("--run", "--command")),
    "vim": _always("vim can run shell commands from its options", "-"),
    "nvim": _always("nvim can run shell commands from its options", "-"),
    "vi": _always("vi can run shell commands from its options", "-"),
    "emacs": _always("emacs can run code from its options", "--"),
    "hash": _always("`hash -p` makes a name run another program", "-p"),
    "enable": _always("`enable -f` loads code from a file into the shell", "-f"),
    "tmux": _always("tmux runs commands the check cannot follow"),
    "screen": _always("screen runs commands the check cannot follow"),
    "at": _always("`at` runs commands from its input later"),
    "batch": _always("`batch` runs commands from its input later"),
    "crontab": _always("`crontab` schedules commands"),
    "expect": _always("expect runs commands the check cannot follow"),
    "mapfile": _always("`mapfile -C` runs a callback", "-C"),
    "fc": _always("`fc` runs commands from the history or through an editor"),
    "history": _always("`history` reads, writes or changes the history the shell runs from"),
    "compgen": _always("`compgen` expands words and runs functions the check cannot follow"),
    "complete": _always("`complete` sets commands that run later"),
    "readarray": _always("`readarray -C` runs a callback", "-C"),
}


# --- variables whose value bash or a program runs ------------------------------------------

DEFERRED_CODE_VARIABLES = frozenset(
    {"PS0", "PS1", "PS2", "PS3", "PS4", "BASH_ENV", "ENV", "PROMPT_COMMAND"}
)
"""Bash expands these later (`set -x` prints PS4, a new bash reads $BASH_ENV): a `$(…)`
in their value runs then."""
PROGRAM_VARIABLES = frozenset(
    {"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR"}
    | {"GIT_SEQUENCE_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF"}
    | {"GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_PROXY_COMMAND", "LESSOPEN"}
    | {"LESSCLOSE", "BROWSER", "RSYNC_RSH"}
)
"""Their value is a command line that programs run: checked as the commands it holds."""
CONFIG_VARIABLES = frozenset(
    {"GIT_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT"}
    | {"GIT_CONFIG_PARAMETERS", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_WORK_TREE"}
    | {"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "HOME", "XDG_CONFIG_HOME"}
    | {"BASH_ALIASES", "BASH_CMDS", "BASH_LOADABLES_PATH", "EXECIGNORE", "HISTFILE"}
)
"""They make a program take code or configuration from a file the line names (git reads
`$HOME/.gitconfig`), or change what a name runs (`BASH_ALIASES[x]=…`, `BASH_CMDS`)."""
CONFIG_PREFIXES = ("GIT_", "BASH_FUNC_")
"""Every git variable but those below (`GIT_TRACE*=PATH` writes PATH, `GIT_COMMON_DIR`
takes the config of another folder …), and imported functions."""
HARMLESS_VARIABLES = frozenset(
    {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME"}
    | {"GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS"}
    | {"GIT_MERGE_AUTOEDIT", "GIT_FLUSH"}
)
"""Git variables that only name, date or quieten (no file, no program)."""
