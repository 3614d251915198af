"""What a tool call touches, split into the parts the chain judges one by one.

A run_command call becomes one CommandPart per simple command (nested and carried ones
included) and one FilePart per redirection or carried write (a write_file or read_file
check on its target); a command on the built-in read-only list also gets a read_file
part per file it reads, so that reading outside the workspace asks and `read(…)` rules
apply to it. A file tool call becomes a FilePart per path argument; a web tool a
UrlPart; a tool of an MCP server one ToolPart whatever its arguments; anything that
cannot be checked becomes a Hazard, which is asked about and never allowed.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from codecoder.boundary import runs_from_inside
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Risk, Tool
from codecoder.permissions.paths import (
    Place,
    git_dir_shaped,
    is_inside,
    place,
    protected_reason,
)
from codecoder.permissions.readonly import read_only
from codecoder.permissions.rules import COMMAND_TOOL, EDIT_FAMILY, READ_FAMILY
from codecoder.permissions.shell import (
    Redirect,
    ShellParse,
    SimpleCommand,
    odd_character,
    parse_command,
)
from codecoder.permissions.words import Word

WRITE_TOOL = "write_file"
READ_TOOL = "read_file"
"""The tool names a shell redirection is checked as (`> f` is a write_file of f)."""

PATH_KEYS = ("path", "file_path", "paths", "file_paths", "directory", "dir")
URL_KEYS = ("url",)
MCP_PREFIX = "mcp__"
"""Tools named `mcp__SERVER__TOOL` come from MCP servers. Their argument names are the
server's: a `path` or `url` there says nothing reliable about what the call touches, so
such a call is judged as a whole (`mcp__git__*` rules), never as a file or a fetch."""
GLOB_TOOLS = frozenset({"glob"})
GLOB_PATTERN_KEY = "pattern"
"""A glob tool walks from its pattern's literal folders (`../../**`, `/etc/*`), so those
are a path the call reads too."""
_GLOB_SYNTAX = re.compile(r"[*?\[{]")
_TILDE_ONLY = re.compile(r"~(/[^$`*?\[{]*)?")
_RUN_TIME = re.compile(r"[$`()]|\{[^{}]*(,|\.\.)[^{}]*\}")
"""Variables, substitutions, `$'…'`, extended globs and brace expansion."""
_TILDE_AFTER = re.compile(r"[=:]~")
_QUOTING = re.compile(r"\\(.)|['\"]")
GLOB = re.compile(r"[*?\[]")


class CommandPart(msgspec.Struct, frozen=True):
    """A simple command, with what the rest of its line says about where it runs."""

    command: SimpleCommand
    cwd: Path
    changes_directory: bool
    tool: str = COMMAND_TOOL
    globs_dotfiles: bool = False
    """The line may make `*` match dot-files such as `.git` (shell.ShellParse)."""
    uses_cdpath: bool = False
    """`cd NAME` may go to a NAME found through CDPATH rather than below the cwd."""
    read_only: bool = False
    """On the built-in read-only list (programs.read_only); what it reads are parts of
    their own."""


class FilePart(msgspec.Struct, frozen=True):
    tool: str
    family: str
    target: Place
    writes: bool
    protected: str | None


class UrlPart(msgspec.Struct, frozen=True):
    tool: str
    url: str
    host: str


class ToolPart(msgspec.Struct, frozen=True):
    """A call with nothing finer to check (no path, no URL, no command)."""

    tool: str
    risk: Risk


class Hazard(msgspec.Struct, frozen=True):
    tool: str
    reason: str


Part = CommandPart | FilePart | UrlPart | ToolPart | Hazard


class Scope(msgspec.Struct, frozen=True):
    """The places a call is judged against."""

    workspace: Path
    roots: tuple[Path, ...]
    config_inside: Path | None = None
    """CodeCoder's config folder (real path) when it lies inside the roots, as when the
    workspace is the home folder: then a plain relative argument can name it."""


def analyse(tool: Tool, call: ToolCall, scope: Scope) -> list[Part]:
    if tool.name == COMMAND_TOOL:
        return command_parts(call.args, scope)
    if tool.name.startswith(MCP_PREFIX):
        return [ToolPart(tool.name, tool.risk)]
    paths = _strings(call.args, PATH_KEYS)
    urls = _strings(call.args, URL_KEYS)
    if paths is None or urls is None:
        return [Hazard(tool.name, "its path or URL argument is not text")]
    pattern = call.args.get(GLOB_PATTERN_KEY) if tool.name in GLOB_TOOLS else None
    if isinstance(pattern, str):
        paths.append(glob_root(paths[0] if paths else ".", pattern))
    parts: list[Part] = [
        file_part(tool.name, tool.risk, raw, scope.workspace, scope, by_tool=True) for raw in paths
    ]
    parts.extend(url_part(tool.name, url) for url in urls)
    return parts or [ToolPart(tool.name, tool.risk)]


def glob_root(path: str, pattern: str) -> str:
    """The folder a glob walks: `path` joined with the pattern's leading literal folders."""
    found = _GLOB_SYNTAX.search(pattern)
    literal = pattern if found is None else pattern[: found.start()]
    return os.path.join(path, os.path.expanduser(os.path.dirname(literal)))


def _strings(args: dict[str, Any], keys: Sequence[str]) -> list[str] | None:
    """The string values under `keys` (lists flattened); None if one is not a string."""
    found: list[str] = []
    for key in keys:
        value = args.get(key)
        if value is None:
            continue
        values: list[Any] = value if isinstance(value, list) else [value]  # type: ignore[assignment]
        if not all(isinstance(item, str) for item in values):
            return None
        found.extend(values)
    return found


def file_part(tool: str, risk: Risk, raw: str, base: Path, scope: Scope, *, by_tool: bool) -> Part:
    """`by_tool`: the path is a file tool's argument (else a shell redirection target)."""
    if "\x00" in raw:
        return Hazard(tool, "the path contains a NUL character")
    try:
        target = place(raw, base, scope.workspace, scope.roots, tool=by_tool)
    except (ValueError, RuntimeError) as exc:  # `~nosuchuser`: the tool reports it too
        return Hazard(tool, f"cannot tell where {raw!r} points: {exc}")
    writes = risk != "read"
    protected = protected_reason(target, scope.roots) if writes else None
    family = EDIT_FAMILY if writes else READ_FAMILY
    return FilePart(tool=tool, family=family, target=target, writes=writes, protected=protected)


def url_part(tool: str, url: str) -> Part:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        host = None
    if not host:
        return Hazard(tool, f"cannot tell which host {url!r} names")
    return UrlPart(tool=tool, url=url, host=host.lower())


def command_parts(args: dict[str, Any], scope: Scope) -> list[Part]:
    command = args.get("command")
    cwd_arg = args.get("cwd")
    if not isinstance(command, str) or not isinstance(cwd_arg, str | None):
        return [Hazard(COMMAND_TOOL, "its command or cwd argument is not text")]
    cwd = _command_cwd(cwd_arg, scope)
    if cwd is None:
        return [Hazard(COMMAND_TOOL, f"its cwd {cwd_arg!r} is outside the workspace")]
    parsed = parse_command(command)
    parts: list[Part] = [Hazard(COMMAND_TOOL, f"`{_short(command)}`: {p}") for p in parsed.problems]
    shaped = git_dir_shaped(cwd, scope.roots)
    if shaped is not None:
        parts.append(
            Hazard(COMMAND_TOOL, f"it runs in {shaped}, a folder shaped like a git directory")
        )
    moves = parsed.changes_directory
    movers = [c for c in parsed.commands if _moves(c)] if moves else []
    after = _first_cd(parsed, movers, cwd, scope)
    for mover in movers:
        target = _cd_operand(mover)
        shaped = git_dir_shaped(cwd / target, scope.roots) if target is not None else None
        if shaped is not None:
            parts.append(Hazard(COMMAND_TOOL, f"it enters {shaped}, shaped like a git directory"))
    for cmd in parsed.commands:
        base: Path | None = cwd
        if moves and cmd is not movers[0]:
            base = after  # None: where the line has moved to is not known here
        reads = _read_parts(cmd, parsed.globs_dotfiles, base, cwd, scope)
        parts.append(
            CommandPart(
                cmd,
                cwd,
                moves,
                COMMAND_TOOL,
                parsed.globs_dotfiles,
                parsed.uses_cdpath or bool(os.environ.get("CDPATH")),
                read_only=reads is not None,
            )
        )
        parts.extend(reads or ())
    parts.extend(_redirect_part(r, cwd, moves, scope) for r in parsed.redirects)
    return parts


def _read_parts(
    cmd: SimpleCommand, dotfiles: bool, base: Path | None, cwd: Path, scope: Scope
) -> list[Part] | None:
    """The read_file parts of a command on the read-only list, its relative paths taken
    from `base` (where the line's `cd` has gone; None: not known). None when it is not a
    plain read: not on the list, a `NAME=value` prefix, or a file it reads that cannot
    be told before it runs (a variable, a glob that may leave the workspace, a relative
    path where the line has gone somewhere unknown)."""
    if cmd.guessed or cmd.assignments:
        return None
    found = read_only(cmd.argv)
    if found is None or _workspace_program(cmd, base or cwd, scope):
        return None
    parts: list[Part] = []
    for word in found.paths:
        paths = readable_paths(word, base or cwd, scope.roots, dotfiles=dotfiles)
        if paths is None or (base is None and not all(p.startswith("/") for p in paths)):
            return None
        where = base or cwd
        parts.extend(
            file_part(READ_TOOL, "read", raw, where, scope, by_tool=False) for raw in paths
        )
    return parts


def _workspace_program(cmd: SimpleCommand, cwd: Path, scope: Scope) -> bool:
    """Whether the program's bare name finds one the roots hold on PATH (an activated
    `.venv/bin`, a relative entry): a `cat` an earlier command put there is no `cat` of
    the read-only list, as `./cat` is not."""
    name = cmd.argv[0].text if cmd.argv else ""
    return "/" not in name and runs_from_inside(name, scope.roots, cwd)


def _moves(cmd: SimpleCommand) -> bool:
    return ShellParse(source="", commands=(cmd,)).changes_directory


def _cd_operand(cmd: SimpleCommand) -> str | None:
    """DIR of a plain `cd DIR` / `pushd DIR` (None for any other form)."""
    argv = cmd.argv
    if len(argv) != 2 or argv[0].text not in ("cd", "pushd") or argv[1].expands:
        return None
    target = argv[1].text
    return None if target.startswith("-") or not target else target


def _first_cd(
    parsed: ShellParse, movers: list[SimpleCommand], cwd: Path, scope: Scope
) -> Path | None:
    """Where the rest of the line runs when it begins with its only change of folder, a
    plain `cd DIR &&` into an existing folder of the workspace (`cd src && cat a.py`);
    None when that cannot be told (another `cd`, CDPATH, a `cd` in a pipeline or a
    subshell, a `;` after which the line goes on even if the `cd` failed)."""
    if len(movers) != 1 or not parsed.commands or parsed.commands[0] is not movers[0]:
        return None
    if not _LEADING_CD.match(parsed.source):
        return None  # `cd x | …`, `(cd x) && …`, `cd x; …`: not where the rest runs
    target = _cd_operand(movers[0])
    if target is None or parsed.uses_cdpath or os.environ.get("CDPATH"):
        return None
    folder = Path(os.path.realpath(cwd / os.path.expanduser(target)))
    return folder if folder.is_dir() and is_inside(folder, scope.roots) else None


_LEADING_CD = re.compile(r"\s*cd\s+[^\s;&|()<>`$]+\s*&&")
MAX_GLOB_MATCHES = 1000
MAX_GLOB_DEPTH = 3
"""Wildcard folders a glob may have for its matches to be looked at (deeper ones ask)."""
"""A read-only command whose glob matches more files than this is asked about."""


def readable_paths(
    word: Word, cwd: Path, roots: Sequence[Path], *, dotfiles: bool
) -> list[str] | None:
    """The paths a read-only command's word names, as places to check: the word itself
    (`~` expanded), or for a glob what it matches now and the folder it starts from (a
    read-only line creates no file, so the matches are those it will read; a link among
    them is judged by where it points). None when the value is only known at run time,
    or the glob could reach a dot-folder or `..`."""
    raw = expand_tilde(word)
    if raw is not None:
        return [raw]
    pattern = glob_pattern(word.text)
    if pattern is None or not GLOB.search(pattern) or "[" in pattern:
        return None  # bash's classes (`[[:alpha:]]`, `[^x]`) are not Python's
    pieces = pattern.split("/")
    first = next(i for i, piece in enumerate(pieces) if GLOB.search(piece))
    wild = [piece for piece in pieces[first:] if GLOB.search(piece)]
    if dotfiles or len(wild) > MAX_GLOB_DEPTH or any(p.startswith(".") for p in pieces[first:]):
        return None
    root = "/".join(pieces[:first]) or ("/" if pattern.startswith("/") else ".")
    if not is_inside(Path(os.path.realpath(cwd / root)), roots):
        return [root]  # outside: that read asks; what it would match is not looked at
    matches = list(itertools.islice(glob.iglob(pattern, root_dir=cwd), MAX_GLOB_MATCHES + 1))
    return None if len(matches) > MAX_GLOB_MATCHES else [root, *matches]


def glob_pattern(text: str) -> str | None:
    """The glob an expanding word stands for, unquoted (quoted glob characters count as
    glob characters, which only widens it); None when it expands in any other way."""
    if _RUN_TIME.search(text) or _TILDE_AFTER.search(text):
        return None
    if text.startswith("~"):
        head, slash, tail = text.partition("/")
        if head != "~":
            return None  # ~user, ~+, ~-
        text = f"{Path.home()}{slash}{tail}"
    return _QUOTING.sub(lambda found: found.group(1) or "", text)


def _command_cwd(cwd_arg: str | None, scope: Scope) -> Path | None:
    """The folder the command runs in, resolved exactly as run_command resolves it
    (tools.shell: `~` expanded, relative to the workspace, symlinks followed); None when
    that is outside the workspace roots."""
    if not cwd_arg:
        return scope.workspace
    if "\x00" in cwd_arg:
        return None
    try:
        target = place(cwd_arg, scope.workspace, scope.workspace, scope.roots, tool=True)
    except (ValueError, RuntimeError):  # `~nosuchuser`
        return None
    return target.real if target.inside else None


def _redirect_part(redirect: Redirect, cwd: Path, moves: bool, scope: Scope) -> Part:
    tool = WRITE_TOOL if redirect.writes else READ_TOOL
    risk: Risk = "write" if redirect.writes else "read"
    raw = expand_tilde(redirect.target)
    if raw is None:
        return Hazard(
            tool, f"the redirection target `{redirect.target.text}` is only known at run time"
        )
    if moves and not raw.startswith("/"):
        return Hazard(tool, f"after `cd`, cannot tell where `{raw}` is")
    return file_part(tool, risk, raw, cwd, scope, by_tool=False)


def expand_tilde(word: Word) -> str | None:
    """The word's path: literal, or `~`/`~/…` expanded as bash would; None if unknowable."""
    if not word.expands:
        return word.text
    if _TILDE_ONLY.fullmatch(word.text):
        return str(Path.home()) + word.text[1:]
    return None


def _short(text: str, limit: int = 80) -> str:
    """A one-line excerpt safe to show: odd characters appear as `<U+XXXX>`."""
    flat = "".join(_visible(char) for char in " ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _visible(char: str) -> str:
    return f"<U+{ord(char):04X}>" if odd_character(char) is not None else char
