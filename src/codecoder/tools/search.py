"""Search tools: glob (files by name) and grep (lines by regex).

grep has two engines that must answer alike: ripgrep when it is installed, a pure-Python
walk otherwise (or when ripgrep rejects a regex Python accepts, such as a look-behind).
Both produce the same per-file records (line number, text, match or context) and one
function renders them, so the output cannot drift. ripgrep runs with every default that
Python would have to imitate switched to something imitable: `--sort path` (the walker's
order), `--hidden` with `.git` excluded, no global gitignore, no transcoding, and files
with a NUL byte dropped whole (ripgrep may report a few lines before it sees the NUL).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, NamedTuple

import msgspec

from codecoder.kernel.ports import Risk, ToolContext
from codecoder.tools.files import FileTool, Refused, target
from codecoder.tools.workspace import (
    GlobSet,
    Override,
    compile_rules,
    display,
    walk,
)

MAX_GLOB_RESULTS = 500
MAX_GREP_LINE_CHARS = 500
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024  # larger files are skipped, as `rg --max-filesize 20M`
_GLOB_CHARS = frozenset("*?[{\\")


# --- glob ----------------------------------------------------------------------------


class GlobArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pattern: Annotated[
        str,
        msgspec.Meta(
            description="Glob matched against paths relative to `path`, e.g. '**/*.py', "
            "'src/**/*.{ts,tsx}', '*.md' (top level only)."
        ),
    ]
    path: Annotated[
        str, msgspec.Meta(description="Directory to search in, relative to the workspace.")
    ] = "."


class Glob(FileTool[GlobArgs]):
    name = "glob"
    description = (
        "Find files whose path matches a glob: `*` and `?` stay within one directory, `**` "
        "spans any number of them, `{a,b}` and `[abc]` as usual. The pattern must match the "
        "whole path relative to `path`. Skips .git and what .gitignore (in a git repository), "
        ".ignore and .rgignore exclude. Newest "
        f"files first, at most {MAX_GLOB_RESULTS}."
    )
    risk: Risk = "read"
    args_type = GlobArgs

    def execute(self, args: GlobArgs, ctx: ToolContext) -> str:
        base = target(ctx, args.path)
        if not base.is_dir():
            state = "not a directory" if base.exists() else "directory not found"
            raise Refused(f"{state}: {display(ctx.workspace, base)}")
        prefix, rest = _literal_prefix(args.pattern)
        root = target(ctx, os.path.join(base, os.path.expanduser(prefix)))
        try:
            rules = compile_rules([_literal_bang(rest)], anchored=True, strict=True)
        except ValueError as exc:
            raise Refused(str(exc)) from exc
        found = sorted(_glob(root, rules, ctx), key=lambda hit: (-hit[0], hit[1]))
        if not found:
            return f"No files match {args.pattern!r} in {_place(display(ctx.workspace, base))}."
        lines = [display(ctx.workspace, path) for _, path in found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(
                f"[{len(found)} files match; showing the {MAX_GLOB_RESULTS} most recently "
                "modified. Narrow the pattern or the path.]"
            )
        return "\n".join(lines)


def _place(shown: str) -> str:
    return "the workspace" if shown == "." else shown


def _literal_prefix(pattern: str) -> tuple[str, str]:
    """Split off the leading directories that hold no glob syntax, so the walk starts
    there ('src/**/*.py' walks src/ only; an absolute pattern walks from its own root)."""
    parts = pattern.split("/")
    first = next((n for n, part in enumerate(parts) if _GLOB_CHARS & set(part)), len(parts) - 1)
    prefix = "/".join(parts[:first])
    return (prefix or ("/" if pattern.startswith("/") else "")), "/".join(parts[first:])


def _literal_bang(glob: str) -> str:
    """In a glob, a leading '!' or '#' is a file name character, not gitignore syntax."""
    return "\\" + glob if glob.startswith(("!", "#")) else glob


def _glob(root: Path, rules: GlobSet, ctx: ToolContext) -> Iterator[tuple[float, str]]:
    if not root.is_dir():
        return
    for entry in walk(root):
        ctx.cancel.check()
        if entry.is_dir or not rules.match(entry.rel, False):
            continue
        if entry.is_file or (entry.is_symlink and os.path.isfile(entry.path)):
            try:
                yield os.stat(entry.path).st_mtime, entry.path
            except OSError:
                continue  # removed while we walked


# --- grep: the arguments and the shared output ---------------------------------------


class GrepArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pattern: Annotated[
        str,
        msgspec.Meta(description="Regular expression (Python / ripgrep syntax) for one line."),
    ]
    path: Annotated[
        str, msgspec.Meta(description="File or directory to search, relative to the workspace.")
    ] = "."
    glob: Annotated[
        str | None,
        msgspec.Meta(
            description="Only search files matching this glob, as ripgrep's --glob: "
            "'*.py' (any depth), 'src/**/*.ts', '*.{c,h}'; a leading '!' excludes."
        ),
    ] = None
    ignore_case: Annotated[bool, msgspec.Meta(description="Match case-insensitively.")] = False
    context: Annotated[
        int, msgspec.Meta(ge=0, le=20, description="Lines of context around each match.")
    ] = 0
    max_results: Annotated[
        int, msgspec.Meta(ge=1, le=2000, description="Stop after this many matching lines.")
    ] = 200


class Row(NamedTuple):
    number: int
    text: str  # without the line end
    is_match: bool


class FileHits(NamedTuple):
    path: str  # absolute
    rows: list[Row]  # sorted by line; every match, with its context lines

    @property
    def matches(self) -> int:
        return sum(row.is_match for row in self.rows)


def render(hits: list[FileHits], args: GrepArgs, workspace: Path, where: str) -> str:
    """`path:line:text` for a match, `path-line-text` for context, `--` between groups;
    files in walk order, lines in order; at most `max_results` matching lines. `hits` runs
    up to the first file that passes max_results (where both engines stop)."""
    out: list[str] = []
    total = 0
    for file in hits:
        room = args.max_results - total
        if room <= 0:
            break
        kept = [row.number for row in file.rows if row.is_match][:room]
        total += len(kept)
        shown = display(workspace, file.path)
        out.extend(_file_lines(file, kept, args.context, shown, separate=bool(out)))
    if not out:
        return f"No matches for {args.pattern!r} in {_place(where)}."
    if sum(file.matches for file in hits) > args.max_results:
        out.append(
            f"[showing the first {args.max_results} matching lines; there are more. "
            "Narrow the pattern, path or glob, or raise max_results.]"
        )
    return "\n".join(out)


def _file_lines(
    file: FileHits, kept: list[int], context: int, shown: str, *, separate: bool
) -> Iterator[str]:
    kept_set = set(kept)
    last: int | None = None
    for row in file.rows:
        if not (row.number in kept_set if row.is_match else _near(row.number, kept, context)):
            continue
        if context and (separate if last is None else row.number != last + 1):
            yield "--"
        sep = ":" if row.is_match else "-"
        text = row.text
        if len(text) > MAX_GREP_LINE_CHARS:
            text = text[:MAX_GREP_LINE_CHARS] + " [… line cut]"
        yield f"{shown}{sep}{row.number}{sep}{text}"
        last = row.number


def _near(number: int, kept: list[int], context: int) -> bool:
    """Whether a context line is within `context` lines of a kept match (kept is sorted)."""
    at = bisect_left(kept, number - context)
    return at < len(kept) and kept[at] <= number + context


# --- grep: the tool ------------------------------------------------------------------


class Grep(FileTool[GrepArgs]):
    name = "grep"
    description = (
        "Search file contents for a regular expression, line by line. Output lines are "
        "`path:line:text` (context lines `path-line-text`, groups split by `--`), files in "
        "path order. Searches hidden files; skips .git, binary files and what .gitignore (in a "
        "git repository), .ignore and .rgignore exclude; `glob` narrows the files. Use "
        "read_file to see more of a hit."
    )
    risk: Risk = "read"
    args_type = GrepArgs

    def __init__(self, rg_path: str | None = None, *, use_rg: bool = True) -> None:
        """`rg_path` defaults to `rg` on PATH; `use_rg=False` forces the Python engine."""
        self._rg_path = rg_path
        self._use_rg = use_rg

    def _ripgrep(self) -> str | None:
        if self._use_rg and self._rg_path is None:
            import shutil

            self._rg_path = shutil.which("rg")
        return self._rg_path if self._use_rg else None

    def execute(self, args: GrepArgs, ctx: ToolContext) -> str:
        regex = _compile(args.pattern, args.ignore_case)
        root = target(ctx, args.path)
        where = display(ctx.workspace, root)
        if root.is_file():
            rows = _search_file(str(root), regex, args.context)
            if rows is None:
                raise Refused(f"cannot search {where}: a binary file, or larger than 20 MiB")
            hits = [FileHits(str(root), rows)] if rows else []
        elif root.is_dir():
            hits = self._search_tree(root, regex, args, ctx)
        else:
            raise Refused(f"path not found: {where}")
        return render(hits, args, ctx.workspace, where)

    def _search_tree(
        self, root: Path, regex: re.Pattern[str], args: GrepArgs, ctx: ToolContext
    ) -> list[FileHits]:
        override = _override(args.glob)
        rg = self._ripgrep()
        hits = _run_ripgrep(rg, root, args, ctx) if rg is not None else None
        if hits is None:
            hits = _search_python(root, regex, override, args, ctx)
        return hits


def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    if re.search(r"\[:\^?[a-z]+:\]", pattern):
        raise Refused(
            f"invalid regex {pattern!r}: POSIX classes like [[:alpha:]] are not supported; "
            "use \\w, \\d, \\s or ranges such as [a-zA-Z]"
        )
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise Refused(f"invalid regex {pattern!r}: {exc}") from exc


def _override(glob: str | None) -> Override | None:
    """ripgrep's --glob semantics: a matching glob includes a path even if it is ignored,
    a matching '!glob' excludes it, and with any plain glob a file must match one."""
    if glob is None:
        return None
    try:
        rules = compile_rules([glob], strict=True)
    except ValueError as exc:
        raise Refused(str(exc)) from exc
    if not rules:
        raise Refused(f"empty glob {glob!r}")
    whitelist = rules.has_whitelist

    def decide(rel: str, is_dir: bool) -> bool | None:
        verdict = rules.match(rel, is_dir)
        if verdict is None and whitelist and not is_dir:
            return False
        return verdict

    return decide


# --- the Python engine ---------------------------------------------------------------


def _search_python(
    root: Path, regex: re.Pattern[str], override: Override | None, args: GrepArgs, ctx: ToolContext
) -> list[FileHits]:
    hits: list[FileHits] = []
    total = 0
    for entry in walk(root, override=override):
        ctx.cancel.check()
        if not entry.is_file:
            continue
        rows = _search_file(entry.path, regex, args.context)
        if rows:
            hits.append(FileHits(entry.path, rows))
            total += hits[-1].matches
            if total > args.max_results:
                break
    return hits


def _search_file(path: str, regex: re.Pattern[str], context: int) -> list[Row] | None:
    """Every matching line with its context; None for a binary, unreadable or huge file.
    Lines split on \\n only, like ripgrep; a \\r before it stays part of what is matched."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_GREP_FILE_BYTES:
                return None
            data = handle.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    text = data.decode("utf-8", "replace")
    lines = text.split("\n") if text else []
    if text.endswith("\n"):
        lines.pop()
    search = regex.search
    matches = [n for n, line in enumerate(lines) if search(line)]
    wanted = sorted({n for m in matches for n in range(m - context, m + context + 1)})
    matched = set(matches)
    return [
        Row(n + 1, lines[n].removesuffix("\r"), n in matched) for n in wanted if 0 <= n < len(lines)
    ]


# --- the ripgrep engine --------------------------------------------------------------


def _ripgrep_command(rg: str, args: GrepArgs) -> list[str]:
    command = [
        rg, "--json", "--no-config", "--hidden", "--no-ignore-global", "--no-messages",
        "--encoding", "none", "--sort", "path", "--max-filesize", "20M",
    ]  # fmt: skip
    if args.glob is not None:
        command += ["--glob", args.glob]
    command += ["--glob", "!.git"]
    if args.ignore_case:
        command.append("--ignore-case")
    if args.context:
        command += ["--context", str(args.context)]
    return [*command, "--regexp", args.pattern, "--", "."]


def _run_ripgrep(rg: str, root: Path, args: GrepArgs, ctx: ToolContext) -> list[FileHits] | None:
    """ripgrep's records, or None when it did not finish its answer (it could not start,
    rejected a regex only Python knows, died): then the Python engine answers. Whether it
    finished is read from the stream (its closing summary), not from an exit status that
    a child subreaper could have taken. The child is killed when the turn is cancelled or
    once enough matches arrived, and always reaped."""
    import subprocess

    try:
        proc = subprocess.Popen(
            _ripgrep_command(rg, args),
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    unregister = ctx.cancel.on_cancel(proc.kill)
    try:
        assert proc.stdout is not None
        hits, complete = _read_ripgrep(proc.stdout, str(root), args.max_results)
    finally:
        unregister()
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    ctx.cancel.check()
    return hits if complete else None


def _read_ripgrep(stream: IO[bytes], root: str, max_results: int) -> tuple[list[FileHits], bool]:
    """Fold `rg --json` messages into FileHits; stop after the file that passes
    max_results. Returns the hits and whether the answer is complete (enough matches, or
    ripgrep's closing summary arrived)."""
    hits: list[FileHits] = []
    rows: list[Row] = []
    total = 0
    for raw in stream:
        message = msgspec.json.decode(raw)
        kind, data = message["type"], message["data"]
        if kind in ("match", "context"):
            rows.append(Row(data["line_number"], _rg_line(data["lines"]), kind == "match"))
        elif kind == "end":
            if rows and data.get("binary_offset") is None:
                hits.append(FileHits(os.path.join(root, _rg_path(data["path"])), rows))
                total += hits[-1].matches
            rows = []
            if total > max_results:
                return hits, True
        elif kind == "summary":
            return hits, True
    return hits, False


def _rg_path(value: dict[str, str]) -> str:
    path = value["text"] if "text" in value else os.fsdecode(_b64(value["bytes"]))
    return path.removeprefix("./")


def _rg_line(value: dict[str, str]) -> str:
    text = value["text"] if "text" in value else _b64(value["bytes"]).decode("utf-8", "replace")
    return text.removesuffix("\n").removesuffix("\r")


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)
