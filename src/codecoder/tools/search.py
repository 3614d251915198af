"""Search tools: glob (files by name) and grep (lines by regex).

grep has two engines that must answer alike: ripgrep when it is installed, a pure-Python
walk otherwise (or when ripgrep rejects a regex Python accepts, such as a look-behind or
a backreference). Both produce the same per-file records (line number, text, match or
context) and one function renders them, so the output cannot drift. ripgrep runs with
every default that Python would have to imitate switched to something imitable: `--sort
path` (the walker's order), `--hidden` with `.git` excluded, no global gitignore, no
transcoding, and files with a NUL byte dropped whole (ripgrep may report a few lines
before it sees the NUL). A single named file goes to ripgrep too.

Python's `re` backtracks, and holds the GIL while it matches: `(a|aa)*b` against a line
of 40 'a's runs for over a minute without letting another thread run. So the Python
engine runs in a child Python process, killed on cancel or after PYTHON_GREP_TIMEOUT.
The residual risk: without ripgrep, or for a pattern only Python accepts, such a regex
still costs up to that long (and one core) before grep gives up with an error; nothing
else stalls. ripgrep's engine is linear-time and needs no limit.

With a sandbox (sandbox/runtime.py), both engines' children run in it, read-only and
without the network, whenever commands are confined.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, NamedTuple

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

if TYPE_CHECKING:
    from collections.abc import Callable
    from subprocess import Popen

    from codecoder.sandbox.runtime import Sandbox

    Wrap = Callable[[list[str], Path | None], list[str]] | None
    """An argv and the folder it starts in → the argv to spawn (the sandbox's)."""

MAX_GLOB_RESULTS = 500
MAX_GREP_LINE_CHARS = 500
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024  # larger files are skipped, as `rg --max-filesize 20M`
_CHUNK = 1 << 20  # bytes read at a time when looking for a NUL
PYTHON_GREP_TIMEOUT = 60.0  # seconds before the Python engine's child is killed
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
    aliases = {"dir_path": "path", "directory": "path"}

    def execute(self, args: GlobArgs, ctx: ToolContext) -> str:
        base = target(ctx, args.path)
        if not base.is_dir():
            state = "not a directory" if base.exists() else "directory not found"
            raise Refused(f"{state}: {display(ctx.workspace, base)}")
        prefix, rest = _literal_prefix(args.pattern)
        root = target(ctx, prefix, base)
        try:
            rules = compile_rules([_literal_bang(rest)], anchored=True, strict=True)
        except ValueError as exc:
            raise Refused(str(exc)) from exc
        found = sorted(_glob(root, rules, ctx), key=lambda hit: (-hit[0], hit[1]))
        if not found:
            where = _place(display(ctx.workspace, base))
            return f"No files match {args.pattern!r} in {where}.{_deeper(rest, root, ctx)}"
        lines = [display(ctx.workspace, path) for _, path in found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(
                f"[{len(found)} files match; showing the {MAX_GLOB_RESULTS} most recently "
                "modified. Narrow the pattern or the path.]"
            )
        return "\n".join(lines)


def _deeper(rest: str, root: Path, ctx: ToolContext) -> str:
    """For a pattern that found nothing at its own level (`*.py`): how many files the
    same pattern finds at any depth, since `*` not crossing folders surprises models
    used to other tools' globs."""
    if "/" in rest or rest.startswith("**"):
        return ""
    rules = compile_rules([_literal_bang(f"**/{rest}")], anchored=True, strict=True)
    count = sum(1 for _ in _glob(root, rules, ctx))
    if not count:
        return ""
    return f" '**/{rest}' (any depth) matches {count} {'file' if count == 1 else 'files'}."


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
    rows: list[Row]  # sorted by line; the matches read, with their context lines

    @property
    def matches(self) -> int:
        return sum(row.is_match for row in self.rows)


def render(hits: list[FileHits], args: GrepArgs, workspace: Path, where: str) -> str:
    """`path:line:text` for a match, `path-line-text` for context, `--` between groups;
    files in walk order, lines in order; at most `max_results` matching lines. `hits` runs
    up to the first match past max_results and its context (where both engines stop
    reading, inside a file too): one match more than is shown is how we know to say so."""
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
    aliases = {
        "include": "glob",
        "-i": "ignore_case",
        "case_insensitive": "ignore_case",
        "-C": "context",
        "context_lines": "context",
        "head_limit": "max_results",
        "dir_path": "path",
        "directory": "path",
    }

    def adapt(self, args: dict[str, Any]) -> dict[str, Any]:
        """Claude Code's `-n` (line numbers) is dropped: ours always has them."""
        return {key: value for key, value in args.items() if key != "-n"}

    def __init__(
        self,
        rg_path: str | None = None,
        *,
        use_rg: bool = True,
        python_timeout: float = PYTHON_GREP_TIMEOUT,
        sandbox: Sandbox | None = None,
    ) -> None:
        """`rg_path` defaults to `rg` on PATH; `use_rg=False` forces the Python engine,
        which gives up after `python_timeout` seconds; `sandbox` confines both."""
        self._rg_path = rg_path
        self._use_rg = use_rg
        self._python_timeout = python_timeout
        self._sandbox = sandbox

    def _ripgrep(self, workspace: Path) -> str | None:
        """The `rg` given, else the one on PATH outside the workspace (where a command
        could have put its own: boundary.host_program; cached there)."""
        if not self._use_rg:
            return None
        if self._rg_path is not None:
            return self._rg_path
        from codecoder.boundary import host_program

        return host_program("rg", (workspace,))

    def execute(self, args: GrepArgs, ctx: ToolContext) -> str:
        _check_text("pattern", args.pattern)
        _compile(args.pattern, args.ignore_case)  # a bad regex is refused before any engine
        if args.glob is not None:
            _check_text("glob", args.glob)
            _override(args.glob)  # and so is a bad glob
        root = target(ctx, args.path)
        where = display(ctx.workspace, root)
        if root.is_file():
            if not _is_text(str(root)):
                raise Refused(f"cannot search {where}: a binary file, or larger than 20 MiB")
        elif not root.is_dir():
            raise Refused(f"path not found: {where}")
        wrap = self._wrap(ctx)
        rg = self._ripgrep(ctx.workspace)
        hits = _run_ripgrep(rg, root, args, ctx, wrap) if rg is not None else None
        if hits is None:
            hits = _run_python(root, args, ctx, self._python_timeout, wrap)
        return render(hits, args, ctx.workspace, where)

    def _wrap(self, ctx: ToolContext) -> Wrap:
        if self._sandbox is None:
            return None
        from codecoder.sandbox import SandboxUnavailable

        try:
            confinement = self._sandbox.confine_search(ctx.workspace)
        except SandboxUnavailable as exc:  # asked for, and bwrap stopped working
            raise Refused(f"grep cannot run in the sandbox: {exc}") from exc
        if confinement is None:
            return None
        return lambda argv, cwd: confinement.wrap(argv, cwd=cwd)


def _check_text(what: str, value: str) -> None:
    """Refuse what cannot be passed to a child process: a NUL, a lone surrogate."""
    if "\0" in value:
        raise Refused(
            f"invalid {what} {value!r}: it contains a NUL character (binary files are never "
            "searched; write \\x00 in a regex to mean a NUL byte)"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refused(f"invalid {what} {value!r}: not valid Unicode ({exc.reason})") from exc


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


@contextmanager
def _child(
    command: list[str], cwd: Path | None, ctx: ToolContext, wrap: Wrap = None
) -> Iterator[Popen[bytes]]:
    """A child with its stdout piped; killed when the turn is cancelled or the block ends,
    and always reaped. Popen's OSError (it could not start) reaches the caller. `wrap`
    confines it (bwrap dies with its parent, and its namespace with it, when killed)."""
    import subprocess

    proc = subprocess.Popen(
        wrap(command, cwd) if wrap is not None else command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    unregister = ctx.cancel.on_cancel(proc.kill)
    try:
        yield proc
    finally:
        unregister()
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _is_text(path: str) -> bool:
    """Whether grep searches the file: not binary (a NUL byte anywhere), not huge."""
    with open(path, "rb") as handle:
        return _text_file(handle)


def _text_file(handle: IO[bytes]) -> bool:
    """Read a chunk at a time, so that the answer costs a megabyte of memory, not the
    file's size; never more than MAX_GREP_FILE_BYTES (the file may grow meanwhile)."""
    if os.fstat(handle.fileno()).st_size > MAX_GREP_FILE_BYTES:
        return False
    left = MAX_GREP_FILE_BYTES + 1
    while chunk := handle.read(min(_CHUNK, left)):
        if b"\0" in chunk:
            return False
        left -= len(chunk)
        if not left:
            return False
    return True


def _cut(text: str) -> str:
    """A line as kept until rendering: one character past what render shows, so that it
    still knows to mark the cut. A line can be 20 MiB, and up to 2,000 of them kept."""
    return text[: MAX_GREP_LINE_CHARS + 1]


# --- the Python engine ---------------------------------------------------------------


class _Request(msgspec.Struct, array_like=True):
    root: bytes  # file names travel as bytes: they need not be UTF-8
    args: GrepArgs  # with path "." (root replaces it), so that it is always valid UTF-8


class _Found(msgspec.Struct, array_like=True, tag=True):
    path: bytes
    rows: list[Row]


class _Finished(msgspec.Struct, array_like=True, tag=True):
    error: str | None = None


# Run isolated (-I: no PYTHON* variables, no current directory on sys.path, where a
# workspace file could shadow a module) with this process's sys.path instead.
_CHILD_CODE = (
    "import sys; sys.path[:0] = sys.argv[2:]; "
    "from codecoder.tools.search import serve_python; serve_python(sys.argv[1])"
)


def _run_python(
    root: Path, args: GrepArgs, ctx: ToolContext, timeout: float, wrap: Wrap = None
) -> list[FileHits]:
    """The Python engine, run in a child Python process. A regex that backtracks
    catastrophically holds the GIL for as long as it runs; in this process that would
    freeze every thread (the UI, the cancel) for seconds or forever. A child is killed on
    cancel or after `timeout` seconds, and this process stays responsive meanwhile."""
    import sys
    import threading

    job = _Request(os.fsencode(root), msgspec.structs.replace(args, path="."))
    request = msgspec.json.encode(job).decode()
    expired = threading.Event()
    try:
        command = [sys.executable, "-I", "-c", _CHILD_CODE, request, *sys.path]
        with _child(command, None, ctx, wrap) as proc:
            timer = threading.Timer(timeout, lambda: (expired.set(), proc.kill()))
            timer.start()
            try:
                assert proc.stdout is not None
                hits, finished = _read_python(proc.stdout)
            finally:
                timer.cancel()
                timer.join()
    except OSError as exc:
        raise Refused(f"grep could not start its Python engine: {exc}") from exc
    ctx.cancel.check()
    if finished is None and expired.is_set():
        raise Refused(
            f"grep gave up after {timeout:g} s: the regex is too slow for Python's engine "
            "(nested or overlapping repetition backtracks). Simplify it or narrow the path."
        )
    if finished is None or finished.error is not None:
        reason = "it stopped unexpectedly" if finished is None else finished.error
        raise Refused(f"grep's Python engine failed: {reason}")
    return hits


def _read_python(stream: IO[bytes]) -> tuple[list[FileHits], _Finished | None]:
    decoder = msgspec.json.Decoder(_Found | _Finished)
    hits: list[FileHits] = []
    for raw in stream:
        record = decoder.decode(raw)
        if isinstance(record, _Finished):
            return hits, record
        hits.append(FileHits(os.fsdecode(record.path), record.rows))
    return hits, None


def serve_python(request: str) -> None:
    """The child's side of `_run_python`: one `_Found` per file with hits on stdout, up to
    the file that passes max_results, then `_Finished`."""
    import sys

    out = sys.stdout.buffer
    try:
        job = msgspec.json.decode(request, type=_Request)
        for hits in _python_hits(os.fsdecode(job.root), job.args):
            out.write(msgspec.json.encode(_Found(os.fsencode(hits.path), hits.rows)) + b"\n")
        finished = _Finished()
    except Exception as exc:  # reported to the parent, which has no other way to see it
        finished = _Finished(f"{type(exc).__name__}: {exc}")
    out.write(msgspec.json.encode(finished) + b"\n")
    out.flush()


def _python_hits(root: str, args: GrepArgs) -> Iterator[FileHits]:
    regex = _compile(args.pattern, args.ignore_case)
    if os.path.isfile(root):
        paths: Iterable[str] = [root]
    else:
        entries = walk(Path(root), override=_override(args.glob))
        paths = (entry.path for entry in entries if entry.is_file)
    total = 0
    for path in paths:
        rows = _search_file(path, regex, args.context, args.max_results + 1 - total)
        if rows:
            hits = FileHits(path, rows)
            yield hits
            total += hits.matches
            if total > args.max_results:
                return


def _search_file(path: str, regex: re.Pattern[str], context: int, room: int) -> list[Row]:
    """The matching lines with their context, up to the `room`-th match and the context
    after it (then reading stops: a 20 MiB file of matches costs what 200 lines do); none
    for a binary, unreadable or huge file. Lines split on \\n only, like ripgrep; a \\r
    before it stays part of what is matched."""
    try:
        with open(path, "rb") as handle:
            if not _text_file(handle):
                return []
            handle.seek(0)
            return _scan(handle, regex, context, room)
    except OSError:
        return []


def _scan(handle: IO[bytes], regex: re.Pattern[str], context: int, room: int) -> list[Row]:
    """One line at a time, keeping only the last `context` lines as they go by (a match
    may want them), so memory stays flat in the file's size."""
    rows: list[Row] = []
    before: deque[Row] = deque(maxlen=context)
    after = found = 0
    last: int | None = None  # once `room` matches are read: the last line wanted
    search = regex.search
    for number, raw in enumerate(handle, 1):
        line = raw.removesuffix(b"\n").decode("utf-8", "replace")
        row = Row(number, _cut(line.removesuffix("\r")), False)
        if search(line):
            rows += before
            before.clear()
            rows.append(row._replace(is_match=True))
            found += 1
            after = context
            if last is None and found >= room:
                last = number + context
        elif after:
            rows.append(row)
            after -= 1
        else:
            before.append(row)
        if last is not None and number >= last:
            break
    return rows


# --- the ripgrep engine --------------------------------------------------------------


def _ripgrep_command(rg: str, args: GrepArgs, where: str) -> list[str]:
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
    return [*command, "--regexp", args.pattern, "--", where]


def _run_ripgrep(
    rg: str, root: Path, args: GrepArgs, ctx: ToolContext, wrap: Wrap = None
) -> list[FileHits] | None:
    """ripgrep's records, or None when it did not finish its answer (it could not start,
    rejected a regex only Python knows, died): then the Python engine answers. Whether it
    finished is read from the stream (its closing summary), not from an exit status that
    a child subreaper could have taken. A file named explicitly is searched whatever the
    globs and ignore files say, by ripgrep as by the Python engine.

    Reading stops past max_results, inside a file too, and ripgrep is killed (and reaped)
    there. A file left unread so could still hold a NUL further on, which ripgrep would
    have reported at its end (and the Python engine never searches): it is checked here,
    and if it is binary the Python engine answers instead, as both engines must agree."""
    cwd, where = (root, ".") if root.is_dir() else (root.parent, root.name)
    try:
        with _child(_ripgrep_command(rg, args, where), cwd, ctx, wrap) as proc:
            assert proc.stdout is not None
            hits, complete, cut = _read_ripgrep(
                proc.stdout, str(cwd), args.max_results, args.context
            )
    except OSError:
        return None
    ctx.cancel.check()
    if cut is not None:
        try:
            if not _is_text(cut):
                return None
        except OSError:
            return None
    return hits if complete else None


def _read_ripgrep(
    stream: IO[bytes], root: str, max_results: int, context: int = 0
) -> tuple[list[FileHits], bool, str | None]:
    """Fold `rg --json` messages into FileHits, and stop at the first match past
    max_results once the context lines after it have come. Returns the hits, whether the
    answer is complete (enough matches, or ripgrep's closing summary arrived), and the
    file that was left before its end (None if none was)."""
    hits: list[FileHits] = []
    rows: list[Row] = []
    path = ""
    total = found = 0
    last: int | None = None  # once past max_results: the last line number wanted
    for raw in stream:
        message = msgspec.json.decode(raw)
        kind, data = message["type"], message["data"]
        if kind == "begin":
            path = os.path.join(root, _rg_path(data["path"]))
        elif kind in ("match", "context"):
            number = data["line_number"]
            if last is not None and number > last:
                break
            rows.append(Row(number, _cut(_rg_line(data["lines"])), kind == "match"))
            if kind == "match":
                found += 1
                if last is None and total + found > max_results:
                    last = number + context
            if last is not None and number >= last:
                break
        elif kind == "end":
            if rows and data.get("binary_offset") is None:
                hits.append(FileHits(os.path.join(root, _rg_path(data["path"])), rows))
                total += found
            rows, found, last = [], 0, None
            if total > max_results:
                return hits, True, None
        elif kind == "summary":
            return hits, True, None
    else:
        return hits, False, None
    hits.append(FileHits(path, rows))
    return hits, True, path


def _rg_path(value: dict[str, str]) -> str:
    path = value["text"] if "text" in value else os.fsdecode(_b64(value["bytes"]))
    return path.removeprefix("./")


def _rg_line(value: dict[str, str]) -> str:
    text = value["text"] if "text" in value else _b64(value["bytes"]).decode("utf-8", "replace")
    return text.removesuffix("\n").removesuffix("\r")


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)
