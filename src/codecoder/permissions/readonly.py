"""The built-in read-only list: plain commands that only read (`ls`, `cat`, `grep`,
`git status` …), allowed at the chain's last level in every mode, and what the options
are that would make them run or write something (then they are judged like any other
command). A command on the list gets a read check for each file it reads, so reading
outside the workspace still asks and `read(…)` rules apply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from codecoder.permissions.programs import NOTHING, carried, find_roots, git_parts, sed_scripts
from codecoder.permissions.sedscript import sed_effects
from codecoder.permissions.words import (
    Word,
    has_option,
    long_option,
    operand_words,
    program_name,
)
from codecoder.permissions.wrappers import unwrap_one


class _ReadOnly(NamedTuple):
    unsafe: tuple[str, ...] = ()
    """Options that make it do more than read what the check sees: follow links while
    it recurses, take its files from a list, set the clock. What it runs or writes
    through an option (`sort -o`, `find -exec`, `base64 -o`) is in the one table of
    programs.py, which `read_only` asks first."""
    paths: str = "operands"
    """Which words are files it reads: `operands`, `none`, or `after-first` (the first
    operand is a pattern, as for grep, unless `-e`/`-f` gives it)."""
    max_operands: int | None = None
    min_operands: int = 0
    values: tuple[str, ...] = ()
    """Options whose value is the next word (so it is not counted as an operand)."""
    here: bool = False
    """Without a path it reads the folder it runs in (`rg x`, `ls`, `find`)."""


_PLAIN_FILES = """
    cat head tail nl od hexdump strings rev tac fold fmt column paste comm join diff
    cmp stat df realpath readlink md5sum sha1sum sha224sum sha256sum sha384sum sha512sum
    b2sum cksum base64 base32 cut
"""
_NO_FILES = """
    pwd echo true false : basename dirname which type uname whoami id seq nproc test [ expr
    tr sleep
"""

READ_ONLY: dict[str, _ReadOnly] = {
    **dict.fromkeys(_PLAIN_FILES.split(), _ReadOnly()),
    **dict.fromkeys(_NO_FILES.split(), _ReadOnly(paths="none")),
    "wc": _ReadOnly(("--files0-from",)),
    "du": _ReadOnly(("--files0-from", "-L", "--dereference"), here=True),
    "ls": _ReadOnly(("-L", "--dereference"), here=True),
    "cd": _ReadOnly(("-",), max_operands=1, min_operands=1),
    "printf": _ReadOnly(("-v",), paths="none"),
    "env": _ReadOnly(paths="none", max_operands=0),
    "printenv": _ReadOnly(paths="none"),
    "hostname": _ReadOnly(("-F", "--file", "-b", "--boot"), paths="none", max_operands=0),
    "date": _ReadOnly(("-s", "--set", "-f", "--file"), paths="date"),
    "file": _ReadOnly(("-C", "--compile", "-f", "--files-from")),
    **dict.fromkeys(
        ("grep", "egrep", "fgrep"),
        _ReadOnly(("-R", "--dereference-recursive"), paths="after-first"),
    ),
    "jq": _ReadOnly(
        ("-f", "--from-file", "--slurpfile", "--rawfile", "-L", "--library-path", "--run-tests"),
        "after-first",
    ),
    "rg": _ReadOnly(("-L", "--follow"), "after-first", here=True),
    "find": _ReadOnly(("-files0-from", "-L", "-follow"), paths="find"),
    "tree": _ReadOnly(("-l", "--fromfile"), here=True),
    "sort": _ReadOnly(("--files0-from",)),
    "uniq": _ReadOnly(values=("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars")),
    "sed": _ReadOnly(("-i", "--in-place", "-f", "--file"), paths="sed"),
    "git": _ReadOnly(paths="git"),
}
"""Plain commands that only read; the options that would make them do more."""

_NO_PATTERN = ("--regexp", "--file", "--files", "--type-list")
"""Options after which grep, rg and jq take no pattern operand: every operand is a file."""

TRANSPARENT_WRAPPERS = frozenset({"time", "nice", "timeout", "stdbuf", "command", "builtin"})
"""Wrappers that add nothing to what they run: read-only when what they run is."""


class ReadOnly(NamedTuple):
    """A command on the read-only list, and the words it reads as files."""

    paths: tuple[Word, ...]


def read_only(argv: tuple[Word, ...]) -> ReadOnly | None:
    """The command as a plain read (None when it is not on the list, or an option or a
    word only known at run time could make it run or write something)."""
    name = program_name(argv)
    if name is None:
        return None
    if name in TRANSPARENT_WRAPPERS:
        step = unwrap_one(argv)
        return ReadOnly(()) if step is not None and step.argv and not step.writes else None
    spec = READ_ONLY.get(name)
    if spec is None or argv[0].text != name:  # `./ls` is a program of the workspace
        return None
    found = carried(argv)
    if found._replace(start=None, reads=()) != NOTHING:  # it runs or writes something
        return None
    listed = _listed_reads(name, spec, argv)
    return None if listed is None else ReadOnly((*listed.paths, *found.reads))


def _listed_reads(name: str, spec: _ReadOnly, argv: tuple[Word, ...]) -> ReadOnly | None:
    """What a listed command reads, beyond the files an option names (`rg --ignore-file
    F`: a carried read, checked as a read like the rest)."""
    args = argv[1:]
    if any(_unsafe(word.text, spec.unsafe) for word in args):
        return None
    if spec.paths == "git":
        return _read_only_git(argv)
    if spec.paths == "sed":
        return _read_only_sed(args)
    if spec.paths == "find":
        return ReadOnly(find_roots(argv) or (Word("."),))
    return _operand_reads(name, spec, args)


def _operand_reads(name: str, spec: _ReadOnly, args: tuple[Word, ...]) -> ReadOnly | None:
    """The files a listed command reads from its operands (None: it would do more)."""
    operands = operand_words(args, spec.values)
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return None
    if len(operands) < spec.min_operands:
        return None
    if spec.paths == "date":  # an operand but `+FORMAT` sets the clock
        return ReadOnly(()) if all(w.text.startswith("+") for w in operands) else None
    if spec.paths == "none":
        return ReadOnly(())
    if name == "jq" and any(re.search(r"\b(import|include)\b", w.text) for w in operands):
        return None  # a jq module is read from any path the program names
    if spec.paths == "after-first" and not has_option(args, "ef", _NO_PATTERN):
        operands = operands[1:]  # the first operand is the pattern
    recursive = name in ("grep", "egrep", "fgrep") and has_option(args, "r", ("--recursive",))
    if not operands and (spec.here or recursive):
        operands = [Word(".")]
    return ReadOnly((*operands, *_attached_values(args)))


def _attached_values(args: Sequence[Word]) -> list[Word]:
    """Values attached to options (`--file=PATH`, `-f/etc/x`): they may name a file the
    program reads, so they are checked as paths too. A cluster of short flags (`-la`)
    names none."""
    found: list[Word] = []
    for word in args:
        text = word.text
        if text == "--":
            break
        if text.startswith("--") and "=" in text:
            found.append(Word(text.split("=", 1)[1], word.expands))
        elif text.startswith("-") and not text.startswith("--") and len(text) > 2:
            value = text[2:]
            if word.expands or not value.isalnum():
                found.append(Word(value, word.expands))
    return found


def _unsafe(text: str, unsafe: Sequence[str]) -> bool:
    """Whether the word gives one of the `unsafe` options: a long one also abbreviated
    (`--outp` is `--output` to getopt), a short one also inside a cluster of flags (`-ni`
    is `-n -i`)."""
    short = text.startswith("-") and not text.startswith("--")
    for option in unsafe:
        if text == option or (option.startswith("--") and long_option(text, option)):
            return True
        if short and len(option) == 2 and option[1] in text[1:]:
            return True
    return False


def _read_only_sed(args: tuple[Word, ...]) -> ReadOnly | None:
    scripts, operands, problems = sed_scripts(args)
    if problems or not scripts:
        return None
    for script in scripts:
        if script.expands:
            return None
        effects = sed_effects(script.text)
        if not effects.readable or effects.writes or effects.reads or effects.scripts:
            return None
        if effects.runs_input:
            return None
    return ReadOnly(tuple(operands))


_GIT_READ_ONLY = frozenset(
    {"status", "log", "diff", "show", "blame", "annotate", "rev-parse", "ls-files", "ls-tree"}
    | {"cat-file", "describe", "shortlog", "merge-base", "show-ref", "grep", "count-objects"}
    | {"name-rev", "for-each-ref", "rev-list", "version", "whatchanged", "cherry", "diff-tree"}
    | {"diff-files", "diff-index", "check-ignore", "check-attr", "var"}
)
_BRANCH_LISTING = """
    -a --all -r --remotes -v -vv --list -l --show-current --contains --merged --no-merged
    --sort --format --points-at --no-color --color --column --no-column
"""
_GIT_LISTING = {
    "branch": tuple(_BRANCH_LISTING.split()),
    "tag": ("-l", "--list", "-n", "--contains", "--merged", "--sort", "--format", "--points-at"),
    "remote": ("-v", "--verbose"),
}
"""Subcommands that only read when every word is one of these flags (`--sort=KEY` too),
or for `branch --list`/`tag -l`, a pattern after it: any other word names something to
create, rename, delete or contact."""
_GIT_UNSAFE = ("--output", "--ext-diff", "--no-index", "-O", "--open-files-in-pager")
_GIT_SAFE_GLOBALS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"})


def _read_only_git(argv: tuple[Word, ...]) -> ReadOnly | None:
    """`git status`, `git log -p`, `git branch -a` …: a subcommand that only reads, with
    no option that writes a file, runs a program or reads outside the repository. Its
    words (revisions, paths, `-C DIR`, `--contents=FILE`) are checked as files it reads:
    git reads a path outside the repository by itself (`git diff /dev/null ~/x`)."""
    options, sub, args = git_parts(argv)
    if sub is None or sub.expands:
        return None
    folders: list[Word] = []
    index = 0
    while index < len(options):
        text = options[index].text
        if text == "-C" and index + 1 < len(options):
            folders.append(options[index + 1])
            index += 2
        elif text in _GIT_SAFE_GLOBALS:
            index += 1
        else:
            return None
    if any(w.expands and w.text.startswith("-") for w in args):
        return None
    if any(_unsafe(w.text, _GIT_UNSAFE) for w in args if w.text.startswith("-")):
        return None
    if not _git_subcommand_reads(sub.text, args):
        return None
    reads = [w for w in args if not w.text.startswith("-")] + _attached_values(args)
    return ReadOnly((*folders, *reads))


def _git_subcommand_reads(sub: str, args: list[Word]) -> bool:
    if sub in _GIT_READ_ONLY:
        return True
    if sub in ("stash", "worktree"):
        allowed = {"stash": ("list", "show"), "worktree": ("list",)}[sub]
        return bool(args) and args[0].text in allowed
    if sub == "reflog":  # `git reflog`, `git reflog -5`, `git reflog show …`
        return not args or args[0].text == "show" or all(w.text.startswith("-") for w in args)
    listing = _GIT_LISTING.get(sub)
    if listing is None:
        return False
    flags = [w for w in args if w.text.startswith("-")]
    patterns = [w for w in args if not w.text.startswith("-")]
    if not all(w.text.split("=", 1)[0] in listing for w in flags):
        return False
    lists = any(w.text in ("-l", "--list") for w in flags)
    return not patterns or (lists and sub in ("branch", "tag"))
