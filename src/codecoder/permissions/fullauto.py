"""What full-auto still asks about in a command it would otherwise run.

full-auto runs any command inside the workspace, so this is a look at the command's own
words: a network client (the network is outside); an argument that plainly names a
place outside the workspace or a protected one (`/etc/x`, `~/x`, `../x`, `.git/hooks`);
an argument whose value is only known at run time (`$HOME/.bashrc`, `"$(…)"`, `{a,b}`),
since it may name either; a glob that could reach outside or into a protected folder
(`.gi?/hooks`, `/et?/passwd`); and a `cd` whose destination is not spelled out (`cd`,
`cd -`, `cd $D`). A best-effort look: what a program does with its arguments and input
is not visible here (docs/permissions.md).
"""

from __future__ import annotations

import fnmatch
import re

from codecoder.permissions.calls import GLOB, CommandPart, Scope, expand_tilde, glob_pattern
from codecoder.permissions.paths import (
    PROTECTED_DIRS,
    is_inside,
    place,
    protected_reason,
    real_path,
)
from codecoder.permissions.words import Word
from codecoder.permissions.wrappers import unwrap

NETWORK_CLIENTS = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp"}
)
"""Commands full-auto asks about: what they fetch or send leaves the workspace."""

_NULL_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_DIRECTORY_CHANGERS = frozenset({"cd", "pushd"})
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_CD_OPTION = re.compile(r"-[LPe@n]+")
_STACK_ENTRY = re.compile(r"[+-]\d+")
_PROTECTED_INSIDE = re.compile(r"(?i)(^|[^\w.-])\.(git|codecoder)(/|$)")
"""A protected folder named inside a longer word (an option's value, an expression)."""
_NUMERIC = re.compile(r"\$(?:[$!?#]|\{[$!?#]\}|\{#[A-Za-z_][A-Za-z0-9_]*\})")
"""`$$`, `$!`, `$?`, `$#`, `${#VAR}`: always a number, which names no place."""
_BRACKETS = re.compile(r"\[.*\]")


def full_auto_concern(part: CommandPart, scope: Scope) -> str | None:
    """Why full-auto should still ask about this command, or None."""
    command = unwrap(part.command.argv)
    name = command.name
    if name in NETWORK_CLIENTS:
        return f"`{name}` reaches the network"
    if name in _DIRECTORY_CHANGERS:
        concern = _cd_concern(name, command.argv[1:], part)
        if concern is not None:
            return concern
    for word in part.command.argv[1:]:
        if name in _DECLARATIONS and _ASSIGNMENT.match(word.text):
            continue  # `export PATH=$HOME/bin:$PATH` sets a variable, names no file
        concern = _argument_concern(word, part, scope)
        if concern is not None:
            return concern
    return None


def _cd_concern(name: str, args: tuple[Word, ...], part: CommandPart) -> str | None:
    """`cd` alone goes home, `cd -` to $OLDPWD, `pushd +1` to an earlier folder: none is
    spelled out. (An expanding target is asked about as an argument.)"""
    target = _cd_target(args)
    if target is None:
        return f"`{name}` without a folder goes to the home folder or an earlier one"
    if target.expands:
        return None
    if target.text == "-" or (name == "pushd" and _STACK_ENTRY.fullmatch(target.text)):
        return f"`{name} {target.text}` goes back to an earlier folder"
    if part.uses_cdpath and not target.text.startswith("/"):
        return f"with CDPATH, `{name} {target.text}` may go to a folder anywhere"
    return None


def _cd_target(args: tuple[Word, ...]) -> Word | None:
    for index, word in enumerate(args):
        if word.expands or not word.text.startswith("-") or word.text == "-":
            return word
        if word.text == "--":
            return args[index + 1] if index + 1 < len(args) else None
        if not _CD_OPTION.fullmatch(word.text):
            return word
    return None


def _argument_concern(word: Word, part: CommandPart, scope: Scope) -> str | None:
    raw = expand_tilde(word)
    shown: str | None = None
    if raw is None:
        text = _option_value(word.text)
        if _is_process_substitution(text):
            return None
        pattern = glob_pattern(_NUMERIC.sub("0", text))
        if pattern is None:
            return f"`{word.text}` is only known at run time"
        if GLOB.search(pattern):
            if _glob_escapes(pattern, part, scope):
                return f"`{word.text}` may match a place outside the workspace or a protected one"
            return None
        raw, shown = pattern, word.text
    for candidate in _places(raw):
        if _names_outside(candidate, part, scope):
            return f"`{shown or candidate}` may be outside the workspace"
        if _in_config(candidate, part, scope):
            return f"`{shown or candidate}` may be in CodeCoder's own configuration"
        protected = _protected(candidate, part, scope)
        if protected is not None:
            return f"`{shown or candidate}`: {protected}"
    return None


def _option_value(text: str) -> str:
    """`--out=PATH` names PATH."""
    return text.split("=", 1)[1] if text.startswith("-") and "=" in text else text


def _places(text: str) -> list[str]:
    """The places a word may name: itself, an option's `=VALUE`, and a value glued to a
    short option (`-t/elsewhere`, `-cf/tmp/x.tar`)."""
    found = [_option_value(text)]
    if text.startswith("-") and not text.startswith("--") and len(text) > 2:
        found += [text[index:] for index in range(2, len(text)) if text[index] in "/~."]
    return found


def _protected(text: str, part: CommandPart, scope: Scope) -> str | None:
    """Why a write to what `text` names would ask (a folder shaped like a git directory,
    the hooks folder), as the file tools judge it."""
    if not text or "://" in text or text in _NULL_SINKS:
        return None
    try:
        target = place(text, part.cwd, scope.workspace, scope.roots, tool=False)
    except (ValueError, RuntimeError):
        return None
    return protected_reason(target, scope.roots)


def _is_process_substitution(text: str) -> bool:
    """`<(…)` / `>(…)` is a pipe (/dev/fd/N); the commands inside are checked on their own."""
    return text[:2] in ("<(", ">(") and text.endswith(")") and not re.search(r"[$`]", text)


def _glob_escapes(pattern: str, part: CommandPart, scope: Scope) -> bool:
    """Whether the glob could match outside the workspace or a protected place: its
    literal folders are checked like a plain argument, and every folder name from the
    first glob on must be unable to match `.git`, `.codecoder` or `..`."""
    pieces = pattern.split("/")
    first = next((i for i, piece in enumerate(pieces) if GLOB.search(piece)), len(pieces))
    literal = "/".join(pieces[:first]) or ("/" if pattern.startswith("/") else ".")
    if _names_outside(literal, part, scope) or _in_config(literal, part, scope, below=True):
        return True
    return any(_may_match_protected(piece, part.globs_dotfiles) for piece in pieces[first:])


def _may_match_protected(piece: str, dotfiles: bool) -> bool:
    """Whether one folder name of a glob could match a protected name or `..`. Bash's
    globs match a leading `.` only when it is written out, unless dotglob is on; a
    bracket expression is widened to `*` (`[[:alpha:]]`, `[^x]` …)."""
    folded = _BRACKETS.sub("*", piece.casefold())
    for name in (*PROTECTED_DIRS, ".."):
        if not folded.startswith(".") and (name == ".." or not dotfiles):
            continue
        if fnmatch.fnmatchcase(name, folded):
            return True
    return False


def _names_outside(text: str, part: CommandPart, scope: Scope) -> bool:
    if not text or text in _NULL_SINKS or "://" in text:
        return False
    pieces = text.split("/")
    if any(piece.casefold() in PROTECTED_DIRS for piece in pieces):
        return True
    if _PROTECTED_INSIDE.search(text):  # `--transform=s,^,.git/hooks/,`
        return True
    if not (text.startswith("/") or ".." in pieces):
        return False
    if part.changes_directory and not text.startswith("/"):
        return True
    return not is_inside(real_path(part.cwd, text), scope.roots)


def _in_config(text: str, part: CommandPart, scope: Scope, *, below: bool = False) -> bool:
    """Whether `text` names CodeCoder's config folder or something in it, when that lies
    inside the workspace; with `below` also a folder that contains it (a glob's literal
    folders may lead into it). Elsewhere a path to it is already outside."""
    config = scope.config_inside
    if config is None or not text or "://" in text:
        return False
    target = real_path(part.cwd, text)
    return target.is_relative_to(config) or (below and config.is_relative_to(target))
