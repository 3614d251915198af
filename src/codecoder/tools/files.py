"""File tools: read_file, write_file, edit_file, list_dir.

Paths are relative to the workspace (absolute ones are accepted; the permission layer
decides whether they may be touched). What a tool finds wrong while running (a missing
file, a binary file, old text that is absent) is a ToolResult with status "error" that
the model can act on; arguments that do not fit the struct are a ToolFailure raised by
TypedTool.parse. A read is bounded (MAX_READ_LINES, MAX_READ_BYTES) and always says which
lines of how many it showed; write_file does not replace a file the session has not read
(tools/ledger.py); edit_file applies a near miss when it is unambiguous
(tools/nearmiss.py), resolved when its arguments are checked, so that the permission
policy, the approval's diff and hooks see the text it will write, where. Writes are
atomic: a temp file in the same directory, then os.replace. So a write replaces the file
rather than rewriting it in place: another hard link to it keeps the old content. A file
without write permission for its owner is refused, as an editor would ask first, rather
than silently replaced.
"""

from __future__ import annotations

import codecs
import os
import stat
from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO, TypeVar

import msgspec

from codecoder.boundary import is_inside, is_own_database, resolve
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext
from codecoder.tools.base import TypedTool
from codecoder.tools.ledger import ReadLedger, Seen
from codecoder.tools.nearmiss import Ambiguous, How, closest, loose_match
from codecoder.tools.workspace import display, printable, walk
from codecoder.wording import counted

MAX_LINE_CHARS = 2000
MAX_READ_LINES = 2000
MAX_READ_BYTES = 50 * 1024
"""One read's output at most: about 12k tokens, so a log or a minified file cannot fill
the context in one call (a 13 MB log once returned ~36k tokens)."""
SNIFF_BYTES = 8192
COUNT_CHUNK = 1 << 20
MAX_LIST_ENTRIES = 500
MAX_LIST_DEPTH = 3

A = TypeVar("A", bound=msgspec.Struct)

PATH_ALIASES = {"file_path": "path", "filePath": "path", "absolute_path": "path"}
"""What Claude Code, OpenCode and Gemini CLI call a file tool's `path`."""


class Refused(Exception):
    """A failure the tool detected while running; becomes a ToolResult with status error."""


class FileTool(TypedTool[A]):
    """A TypedTool whose `execute` returns the text for the model or raises Refused;
    OSError (permission denied, a file vanished) is reported the same way."""

    def call(self, args: A, ctx: ToolContext) -> ToolResult:
        try:
            text = self.execute(args, ctx)
        except Refused as exc:
            return tool_result(ctx.call_id, str(exc), "error")
        except OSError as exc:
            return tool_result(ctx.call_id, describe_os_error(exc, ctx.workspace), "error")
        return tool_result(ctx.call_id, text)

    @abstractmethod
    def execute(self, args: A, ctx: ToolContext) -> str:
        """The text for the model; raise Refused for a failure found while running."""


def describe_os_error(exc: OSError, workspace: Path) -> str:
    reason = exc.strerror or str(exc)
    if isinstance(exc.filename, str):
        return f"{reason}: {display(workspace, exc.filename)}"
    return reason


def target(ctx: ToolContext, path: str, base: Path | None = None) -> Path:
    """`path` resolved against `base` (default: the workspace); Refused when it cannot be."""
    try:
        return resolve(ctx.workspace if base is None else base, path)
    except ValueError as exc:
        raise Refused(f"invalid path {path!r}: {exc}") from exc


def regular_file(ctx: ToolContext, path: Path, *, must_exist: bool = True) -> os.stat_result | None:
    """The file's stat, or Refused with a message that says what to do instead."""
    shown = display(ctx.workspace, path)
    try:
        info = path.stat()
    except FileNotFoundError:
        if must_exist:
            raise Refused(f"file not found: {shown}") from None
        return None
    except OSError as exc:  # a name too long, a loop of links, a folder it may not enter
        name = shown if len(shown) <= 200 else f"{shown[:200]}… ({len(shown)} characters)"
        raise Refused(f"cannot open {name}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise Refused(f"{shown} is a directory; use list_dir to see what it holds")
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{shown} is not a regular file")
    if is_own_database(info):
        raise Refused(
            f"{shown} is CodeCoder's own session store, in use by this session: file tools "
            "do not open it (use `codecoder sessions`, or sqlite3 through run_command)"
        )
    return info


def writable_file(ctx: ToolContext, path: Path, *, must_exist: bool) -> os.stat_result | None:
    """`regular_file`, and Refused for an existing file its owner may not write: replacing
    it would succeed (the directory allows it) but overrule the file's own protection."""
    info = regular_file(ctx, path, must_exist=must_exist)
    if info is not None and not info.st_mode & stat.S_IWUSR:
        raise Refused(
            f"{display(ctx.workspace, path)} is read-only "
            f"(mode {stat.S_IMODE(info.st_mode):o}); make it writable first if it really "
            "should change"
        )
    return info


def sniff_text(head: bytes, *, complete: bool) -> str | None:
    """Why `head` (the start of a file) is not text, or None when it is."""
    if b"\0" in head:
        return "it contains NUL bytes (a binary file)"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
    except UnicodeDecodeError as exc:
        return f"it is not UTF-8 text (invalid byte at offset {exc.start})"
    return None


# --- read_file -----------------------------------------------------------------------


class ReadFileArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: Annotated[str, msgspec.Meta(description="File to read, relative to the workspace.")]
    offset: Annotated[int, msgspec.Meta(ge=1, description="First line to show (1-based).")] = 1
    limit: Annotated[
        int, msgspec.Meta(ge=1, description=f"Lines to show (at most {MAX_READ_LINES}).")
    ] = MAX_READ_LINES


class ReadFile(FileTool[ReadFileArgs]):
    name = "read_file"
    description = (
        "Read a UTF-8 text file, lines numbered like `cat -n` (the numbers are not part of "
        f"the file). One call shows at most {MAX_READ_LINES} lines or "
        f"{MAX_READ_BYTES // 1024} KB from `offset`, lines cut at {MAX_LINE_CHARS} "
        "characters, and ends with `[lines X-Y of N (size)]` and the offset to read on from."
    )
    risk: Risk = "read"
    args_type = ReadFileArgs
    aliases = PATH_ALIASES

    def __init__(self, reads: ReadLedger | None = None) -> None:
        """`reads`: the session's ledger, shared with its write_file and edit_file."""
        self.reads = reads or ReadLedger()

    def execute(self, args: ReadFileArgs, ctx: ToolContext) -> str:
        path = target(ctx, args.path)
        info = regular_file(ctx, path)
        assert info is not None
        shown = display(ctx.workspace, path)
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
            if not head:
                self.reads.read(path, info)
                return f"{shown} is empty (0 bytes)."
            why = sniff_text(head, complete=len(head) < SNIFF_BYTES)
            if why is not None:  # seen for what it is: write_file may replace it
                self.reads.read(path, info)
                raise Refused(
                    f"cannot show {shown} ({counted(info.st_size, 'byte')}): {why}. "
                    "Inspect it with run_command."
                )
            text = _numbered(handle, args.offset, args.limit, shown)
        self.reads.read(path, info)
        return text


def _numbered(handle: BinaryIO, offset: int, limit: int, shown: str) -> str:
    """Lines `offset`… of the file, within MAX_READ_LINES and MAX_READ_BYTES, and a last
    line saying which lines of how many these are and where to go on."""
    handle.seek(0)
    total = _line_count(handle)
    if offset > total:
        raise Refused(f"offset {offset} is past the end of {shown} ({counted(total, 'line')})")
    handle.seek(0)
    out: list[str] = []
    used = 0
    last = offset - 1
    capped = False
    for number, line in enumerate(_lines(handle), start=1):
        if number < offset:
            continue
        if number >= offset + min(limit, MAX_READ_LINES):
            break
        row = f"{number:>6}\t{line}"
        if out and used + len(row.encode()) + 1 > MAX_READ_BYTES:
            capped = True
            break
        out.append(row)
        used += len(row.encode()) + 1
        last = number
    size = handle.seek(0, os.SEEK_END)
    where = f"[lines {offset}-{last} of {total} ({_size(size)})"
    if last < total:
        why = f"{MAX_READ_BYTES // 1024} KB per read; " if capped else ""
        where += f"; {why}read on with offset={last + 1}"
    out.append(where + "]")
    return "\n".join(out)


def _line_count(handle: BinaryIO) -> int:
    """Lines as _lines splits them (on \\n; a last line without one counts)."""
    count = 0
    last = b"\n"
    while chunk := handle.read(COUNT_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _size(size: int) -> str:
    if size < 1024:
        return counted(size, "byte")
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _lines(handle: BinaryIO) -> Iterator[str]:
    """The file's lines (split on \\n only, as grep counts them), without their line end,
    each cut to MAX_LINE_CHARS; a huge line is skipped over, never held in memory."""
    budget = MAX_LINE_CHARS * 4 + 4
    while raw := handle.readline(budget):
        complete = raw.endswith(b"\n") or len(raw) < budget
        while not complete:
            rest = handle.readline(1 << 16)
            complete = not rest or rest.endswith(b"\n")
        text = raw.decode("utf-8", "replace").removesuffix("\n").removesuffix("\r")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f" [… line cut at {MAX_LINE_CHARS} characters]"
        yield text


# --- write_file and edit_file --------------------------------------------------------


def atomic_write(path: Path, data: bytes) -> os.stat_result | None:
    """Replace `path` with `data` so that a reader sees the old file or the new one, never
    half of it. Keeps an existing file's mode; a new file gets the umask's. Returns the
    old file's stat (None when it was created)."""
    try:
        old = path.stat()
    except FileNotFoundError:
        old = None
    path.parent.mkdir(parents=True, exist_ok=True)
    temp, fd = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if old is not None:
            os.chmod(temp, stat.S_IMODE(old.st_mode))
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return old


def _create_temp(path: Path) -> tuple[str, int]:
    # O_CREAT with mode 0o666 lets the kernel apply the umask (mkstemp would give 0600).
    while True:
        temp = os.path.join(path.parent, f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refused(f"{what} is not valid Unicode text: {exc.reason}") from exc


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


class WriteFileArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: Annotated[str, msgspec.Meta(description="File to write, relative to the workspace.")]
    content: Annotated[str, msgspec.Meta(description="The complete new content of the file.")]


class WriteFile(FileTool[WriteFileArgs]):
    name = "write_file"
    description = (
        "Create a file or replace its whole content (UTF-8). Missing parent directories "
        "are created; an existing file keeps its permissions (a read-only one is refused) "
        "but is replaced by a new file, so hard links to it keep the old content. A file "
        "that is not empty must have been read first, and not changed since. To change "
        "part of a file, prefer edit_file."
    )
    risk: Risk = "write"
    args_type = WriteFileArgs
    aliases = PATH_ALIASES

    def __init__(self, reads: ReadLedger | None = None) -> None:
        """`reads`: the session's ledger, shared with its read_file and edit_file."""
        self.reads = reads or ReadLedger()

    def execute(self, args: WriteFileArgs, ctx: ToolContext) -> str:
        path = target(ctx, args.path)
        shown = display(ctx.workspace, path)
        info = writable_file(ctx, path, must_exist=False)
        if info is not None and info.st_size > 0:
            seen = self.reads.seen(path, info)
            if seen is Seen.UNREAD:
                raise Refused(
                    f"{shown} exists ({counted(info.st_size, 'byte')}) and this session has "
                    "not read it; read_file it first so nothing in it is lost unseen, or "
                    "change part of it with edit_file"
                )
            if seen is Seen.CHANGED:
                raise Refused(
                    f"{shown} changed since this session last read it (now "
                    f"{counted(info.st_size, 'byte')}); read_file it again before "
                    "replacing it"
                )
        data = _encode(args.content, "content")
        old = atomic_write(path, data)
        self.reads.read(path, path.stat())
        written = f"{counted(len(data), 'byte')}, {counted(_count_lines(args.content), 'line')}"
        if old is None:
            return f"Created {shown} ({written})."
        return f"Overwrote {shown} ({written}; was {counted(old.st_size, 'byte')})."


class EditFileArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: Annotated[str, msgspec.Meta(description="File to edit, relative to the workspace.")]
    old_text: Annotated[
        str,
        msgspec.Meta(description="Exact text to replace, including whitespace and indentation."),
    ]
    new_text: Annotated[str, msgspec.Meta(description="The text to put in its place.")]
    replace_all: Annotated[
        bool,
        msgspec.Meta(description="Replace every occurrence instead of exactly one."),
    ] = False
    near_miss: How | None = None
    """Set by `EditFile.validate`, never offered to the model: old_text and new_text are
    a near miss resolved against the file (its exact lines, new_text adapted), and the
    result says how the model's old_text differed."""


class EditFile(FileTool[EditFileArgs]):
    name = "edit_file"
    description = (
        "Replace exact text in a UTF-8 file. `old_text` must occur exactly once (include "
        "enough surrounding lines to make it unique) unless `replace_all` is true. Copy "
        "the file's text without read_file's line-number prefixes; a match that differs "
        "only in indentation or trailing spaces is applied when it is unique. Like "
        "write_file, it replaces the file (read-only files are refused)."
    )
    risk: Risk = "write"
    args_type = EditFileArgs
    aliases = {
        **PATH_ALIASES,
        "old_string": "old_text",
        "oldString": "old_text",
        "old_str": "old_text",
        "new_string": "new_text",
        "newString": "new_text",
        "new_str": "new_text",
        "replaceAll": "replace_all",
    }

    def __init__(self, reads: ReadLedger | None = None, workspace: Path | None = None) -> None:
        """`reads`: the session's ledger, shared with its read_file and write_file;
        `workspace`: where `validate` finds the file to resolve a near miss in (without
        one, a near miss is resolved when the edit runs)."""
        self.reads = reads or ReadLedger()
        self.workspace = workspace

    @property
    def parameters(self) -> dict[str, Any]:
        """The struct's schema without `near_miss`, which only `validate` sets."""
        schema = super().parameters
        properties = {k: v for k, v in schema["properties"].items() if k != "near_miss"}
        return {**schema, "properties": properties}

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """The checked arguments; for an old_text that is a near miss of the file's text,
        the file's exact lines, new_text as it will be written there and `near_miss`.
        Otherwise the approval would show the model's text at no place in the file,
        and the edit would write other text (re-indented) somewhere the person never
        saw. Reads the file; writes nothing."""
        checked = super().validate(args)
        if self.workspace is None:
            return checked
        found = _resolved(self.workspace, self.parse(checked))
        if found is None:
            return checked
        old, new, how = found
        return {**checked, "old_text": old, "new_text": new, "near_miss": how}

    def execute(self, args: EditFileArgs, ctx: ToolContext) -> str:
        if not args.old_text:
            raise Refused("old_text is empty; use write_file to create or overwrite a file")
        if args.old_text == args.new_text:
            raise Refused("old_text and new_text are the same; nothing to change")
        path = target(ctx, args.path)
        info = writable_file(ctx, path, must_exist=True)
        assert info is not None
        shown = display(ctx.workspace, path)
        seen = self.reads.seen(path, info)
        changed = (
            f" {shown} changed since this session last read it." if seen is Seen.CHANGED else ""
        )
        text = _read_text(path, shown)
        old, new = _matching_newlines(text, args.old_text, args.new_text)
        starts = _occurrences(text, old)
        if not starts and args.near_miss is not None:
            raise Refused(
                f"{shown} changed after this edit was checked: the lines its old_text was "
                "matched to are no longer there. Read the file again."
            )
        if not starts:
            updated, done = _near_miss(text, args, shown, changed)
        else:
            _check_count(starts, text, args, shown)
            updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
            shift = len(new) - len(old)
            lines = [updated.count("\n", 0, at + k * shift) + 1 for k, at in enumerate(starts)]
            done = f"Edited {shown}: {_plural(len(starts), 'replacement')} ({_at_lines(lines)})."
            if args.near_miss is not None:
                done = _adapted(shown, lines[0], args.near_miss)
        atomic_write(path, _encode(updated, "new_text"))
        if seen is Seen.CURRENT:
            self.reads.read(path, path.stat())
        if changed:
            done += f"{changed} The edit matched its current text; read it again before "
            done += "relying on the rest of it."
        return done


def _read_text(path: Path, shown: str) -> str:
    data = path.read_bytes()
    why = sniff_text(data, complete=True)
    if why is not None:
        raise Refused(f"cannot edit {shown}: {why}")
    return data.decode("utf-8")


def _matching_newlines(text: str, old: str, new: str) -> tuple[str, str]:
    """A model writes \\n; a CRLF file needs \\r\\n to match, and the lines an edit adds
    to a file whose line ends are all CRLF get CRLF too, so the file stays consistent."""
    crlf_old = old not in text and "\r\n" in text and "\n" in old and "\r\n" not in old
    if crlf_old:
        old = old.replace("\n", "\r\n")
    all_crlf = text.count("\n") == text.count("\r\n") > 0
    if (crlf_old or all_crlf) and "\r\n" not in new:
        new = new.replace("\n", "\r\n")
    return old, new


def _occurrences(text: str, old: str) -> list[int]:
    starts: list[int] = []
    index = text.find(old)
    while index >= 0:
        starts.append(index)
        index = text.find(old, index + len(old))
    return starts


def _resolved(workspace: Path, args: EditFileArgs) -> tuple[str, str, How] | None:
    """old_text and new_text as a near miss applies them to the file (the file's exact
    lines, unique in it, and what replaces them), with how old_text differed; None when
    old_text is exact, or not a near miss that applies, or the file cannot be read:
    then the edit runs with what the model gave and says what went wrong."""
    if not args.old_text or args.old_text == args.new_text or args.near_miss is not None:
        return None
    text = _peek_text(workspace, args.path)
    if text is None or _matching_newlines(text, args.old_text, args.new_text)[0] in text:
        return None
    try:
        loose = loose_match(text, args.old_text, args.new_text)
    except Ambiguous:
        return None
    if loose is None or text.count(loose.old) != 1:  # also inside a longer line: let run match
        return None
    return loose.old, _matching_newlines(text, loose.old, loose.new)[1], loose.how


PEEK_BYTES = 8 * 1024 * 1024
"""The largest file whose near miss is resolved while arguments are checked."""


def _peek_text(workspace: Path, path: str) -> str | None:
    """The text of the regular file `path` names, or None: opened without blocking (a
    FIFO put there is not waited on) and only read, since arguments are being checked,
    before the permission policy: so only a file inside the workspace (a path outside,
    or a link leading out, is left to the run, once the call is allowed) and not over
    PEEK_BYTES."""
    try:
        where = resolve(workspace, path)
        if not is_inside(where, [workspace]):
            return None
        info = where.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > PEEK_BYTES:
            return None
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (ValueError, OSError):
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or is_own_database(info):
                return None
            data = handle.read(PEEK_BYTES + 1)
        except OSError:
            return None
    if len(data) > PEEK_BYTES or sniff_text(data, complete=True) is not None:
        return None
    return data.decode("utf-8")


def _near_miss(text: str, args: EditFileArgs, shown: str, changed: str) -> tuple[str, str]:
    """The file edited where old_text matches but for whitespace, with what to tell the
    model; Refused, with the closest lines, when it does not match once so."""
    try:
        loose = loose_match(text, args.old_text, args.new_text)
    except Ambiguous as exc:
        raise Refused(
            f"old_text not found in {shown} as given; ignoring whitespace it matches "
            f"{len(exc.lines)} places ({_at_lines(exc.lines)}). Copy the text exactly, "
            "with enough lines around it to be unique."
        ) from None
    if loose is None:
        near = closest(text, args.old_text)
        shown_lines = f" The closest lines:\n{near}" if near is not None else ""
        raise Refused(
            f"old_text not found in {shown}.{changed} Read the file again and copy the text "
            f"exactly, without line-number prefixes.{shown_lines}"
        )
    return loose.text, _adapted(shown, loose.line, loose.how)


def _adapted(shown: str, line: int, how: How) -> str:
    """The result of an edit whose old_text was a near miss: what was corrected."""
    done = f"Edited {shown}: 1 replacement (line {line}), matched with the {how} of old_text "
    if how == "indentation":
        return done + (
            "corrected to the file's; new_text was shifted the same. Check the result if "
            "indentation matters."
        )
    return done + (
        "corrected to the file's; the lines new_text keeps from old_text keep the file's, "
        "the others are as given."
    )


def _check_count(starts: list[int], text: str, args: EditFileArgs, shown: str) -> None:
    if len(starts) > 1 and not args.replace_all:
        lines = [text.count("\n", 0, start) + 1 for start in starts]
        raise Refused(
            f"old_text occurs {len(starts)} times in {shown} ({_at_lines(lines)}); include "
            "more surrounding context to pick one, or set replace_all to change them all"
        )


def _at_lines(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:10])
    more = f" and {len(lines) - 10} more" if len(lines) > 10 else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# --- list_dir ------------------------------------------------------------------------


class ListDirArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: Annotated[
        str, msgspec.Meta(description="Directory to list, relative to the workspace.")
    ] = "."
    depth: Annotated[
        int,
        msgspec.Meta(ge=1, le=MAX_LIST_DEPTH, description="How many levels to descend."),
    ] = 1


class ListDir(FileTool[ListDirArgs]):
    name = "list_dir"
    description = (
        "List a directory: entries sorted by name, directories end with '/', symlinks "
        f"with '@', deeper levels indented (depth up to {MAX_LIST_DEPTH}). Skips .git and, "
        f"inside a git repository, what .gitignore excludes. At most {MAX_LIST_ENTRIES} "
        "entries."
    )
    risk: Risk = "read"
    args_type = ListDirArgs
    aliases = {"dir_path": "path", "directory": "path"}

    def execute(self, args: ListDirArgs, ctx: ToolContext) -> str:
        path = target(ctx, args.path)
        shown = display(ctx.workspace, path)
        if not path.exists():
            raise Refused(f"directory not found: {shown}")
        if not path.is_dir():
            raise Refused(f"{shown} is not a directory; use read_file to read a file")
        out: list[str] = []
        for entry in walk(path, max_depth=args.depth):
            if len(out) == MAX_LIST_ENTRIES:
                out.append(
                    f"[listing cut at {MAX_LIST_ENTRIES} entries; list a subdirectory "
                    "or use a smaller depth]"
                )
                break
            mark = "/" if entry.is_dir else "@" if entry.is_symlink else ""
            name = printable(entry.rel.rsplit("/", 1)[-1])
            out.append(f"{'  ' * (entry.depth - 1)}{name}{mark}")
        return "\n".join(out) if out else f"{shown} is empty."
