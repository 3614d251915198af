"""Undo and redo of a turn's changes (docs/undo.md).

Undo puts every file the turn changed back as it was before the turn; redo puts it back
as the turn left it. Either happens only when every one of those files is still as the
turn left it (undo) or as the undo left it (redo): a file changed since, by you, another
program or a later turn, is not overwritten, and the whole undo is refused naming those
files (undo the later turn first, or `force`). Nothing is half done: every file is
checked, and every path made sure to lie in the workspace with no symlink on the way,
before the first one is written. Undone is a state of the checkpoint, so an undo can be
redone and a redo undone again.

Which checkpoint: the one asked for (a session, a turn), else the workspace's latest
session that has one, and its last turn not undone (for redo: the turn undone last).
`with_history` rewinds the conversation too: a fork of the session ending before the
turn's first message (the session store's fork), which `codecoder resume` picks up as
the workspace's latest session.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from codecoder.checkpoints.objects import FileState, ObjectStore, StoreError
from codecoder.checkpoints.record import FileChange, decode_changes
from codecoder.sessions import SessionError, SessionStore
from codecoder.sessions.records import CheckpointRow
from codecoder.terminal_text import visible

MAX_DIFF_LINES = 2000
"""Lines of diff shown per file (the restore itself is whole)."""

Direction = Literal["undo", "redo"]


class UndoError(Exception):
    """Nothing to undo (or redo), or what was asked for does not exist."""


ConflictKind = Literal["changed", "unsafe", "store"]


class Conflict(msgspec.Struct, frozen=True):
    """Why `path` stops the undo: `changed` since (`force` overwrites it), `unsafe` to
    write (a path through a symlink or a folder the turn did not make: never written),
    or the `store` cannot give its content back (damaged, or the file was not kept)."""

    path: str
    why: str
    kind: ConflictKind = "changed"


class Restored(msgspec.Struct, frozen=True):
    """One file put back: `action` is `restored` (its content changed back), `deleted`
    (the turn created it) or `recreated` (the turn deleted it)."""

    path: str
    action: Literal["restored", "deleted", "recreated"]


class UndoReport(msgspec.Struct):
    """What an undo or redo did, or (conflicts) why it did nothing."""

    direction: Direction
    session_id: str
    turn: int
    files: list[Restored] = msgspec.field(default_factory=list)
    conflicts: list[Conflict] = msgspec.field(default_factory=list)
    diff: str = ""
    fork: str | None = None
    """With history: the new session the conversation goes on in."""
    dry_run: bool = False
    not_kept: list[Conflict] = msgspec.field(default_factory=list)
    """Files the turn changed whose state was never kept (over `[undo] max_file_mb`):
    left as they are; the rest is restored."""

    @property
    def done(self) -> bool:
        return not self.conflicts

    def to_wire(self) -> dict[str, object]:
        """The result of `_codecoder/undo` (docs/acp.md), which the terminal client also
        reads from an in-process session."""
        return {
            "direction": self.direction,
            "turn": self.turn,
            "done": self.done,
            "dryRun": self.dry_run,
            "files": [{"path": f.path, "action": f.action} for f in self.files],
            "conflicts": [{"path": c.path, "why": c.why, "kind": c.kind} for c in self.conflicts],
            "diff": self.diff,
            "forkSessionId": self.fork,
            "notKept": [{"path": c.path, "why": c.why} for c in self.not_kept],
        }


def undo_session(
    store: SessionStore,
    workspace: Path,
    session_id: str,
    *,
    turn: int | None = None,
    redo: bool = False,
    dry_run: bool = False,
    force: bool = False,
    with_history: bool = False,
) -> UndoReport:
    """Undo (or redo) a turn of one session: `pick`, then `apply` (UndoError when there
    is nothing to do)."""
    direction: Direction = "redo" if redo else "undo"
    row = pick(store, workspace, session_id=session_id, turn=turn, direction=direction)
    return apply(store, row, direction, dry_run=dry_run, force=force, with_history=with_history)


def pick(
    store: SessionStore,
    workspace: Path,
    *,
    session_id: str | None = None,
    turn: int | None = None,
    direction: Direction = "undo",
) -> CheckpointRow:
    """The checkpoint to undo or redo (see the module docstring)."""
    if session_id is not None:
        rows = store.checkpoints(session_id=session_id)
        elsewhere = {row.workspace for row in rows} - {str(workspace), str(workspace.resolve())}
        if elsewhere:  # a short id may name any folder's session: never act on another's
            folder = sorted(elsewhere)[0]
            raise UndoError(
                f"session {session_id[:8]} changed files in {folder}, not in {workspace}: "
                f"run the undo there (-C {folder})"
            )
    else:
        rows = _latest_session_rows(store, workspace, direction)
    if turn is not None:
        found = [row for row in rows if row.turn == turn]
        if not found:
            where = f"session {rows[0].session_id[:8]}" if rows else "this session"
            raise UndoError(f"turn {turn} of {where} changed no file that can be undone")
        row = found[0]
        wanted = "done" if direction == "undo" else "undone"
        if row.state != wanted:
            again = "undone already (redo it with --redo)" if direction == "undo" else "not undone"
            raise UndoError(f"turn {turn} is {again}")
        return row
    if direction == "undo":
        done = [row for row in rows if row.state == "done"]
        if not done:
            raise UndoError(_nothing(workspace, session_id, "undo"))
        return max(done, key=lambda row: row.turn)
    undone = [row for row in rows if row.state == "undone"]  # latest change first
    if not undone:
        raise UndoError(_nothing(workspace, session_id, "redo"))
    return undone[0]


def _latest_session_rows(
    store: SessionStore, workspace: Path, direction: Direction
) -> list[CheckpointRow]:
    """The checkpoints of the workspace's latest session that has one to act on."""
    wanted = "done" if direction == "undo" else "undone"
    rows = store.checkpoints(workspace=workspace)
    sessions = {row.session_id for row in rows if row.state == wanted}
    for info in store.list_sessions(workspace):
        if info.id in sessions:
            return [row for row in rows if row.session_id == info.id]
    return []


def _nothing(workspace: Path, session_id: str | None, direction: Direction) -> str:
    where = f"session {session_id[:8]}" if session_id else str(workspace)
    if direction == "undo":
        return f"nothing to undo in {where}: no turn there changed a file it could restore"
    return f"nothing to redo in {where}: no turn there is undone"


def apply(
    store: SessionStore,
    row: CheckpointRow,
    direction: Direction = "undo",
    *,
    dry_run: bool = False,
    force: bool = False,
    with_history: bool = False,
) -> UndoReport:
    """Undo (or redo) the checkpoint `row`: refused with the conflicts when a file
    changed since (unless `force`); the diff says what is, or would be, restored."""
    workspace = Path(row.workspace)
    objects = ObjectStore(workspace, Path(row.store))
    report = UndoReport(direction, row.session_id, row.turn, dry_run=dry_run)
    changes: list[FileChange] = []
    for change in decode_changes(row.files):
        if change.lost:
            report.not_kept.append(Conflict(change.path, change.lost, "store"))
        else:
            changes.append(change)
    sides = [_sides(change, direction) for change in changes]
    going = _links_going(
        workspace, objects, [(c.path, pair) for c, pair in zip(changes, sides, strict=True)], force
    )
    emptied = {
        change.path for change, (_, target) in zip(changes, sides, strict=True) if target is None
    }
    plan: list[tuple[FileChange, FileState | None, bytes | None, bytes | None]] = []
    for change, (expected, target) in zip(changes, sides, strict=True):
        path = workspace / change.path
        conflict = _unsafe(workspace, change.path, going)
        now: FileState | None = None
        current: bytes | None = None
        if conflict is None and not _under(change.path, going):  # never read through one
            try:
                now, current = objects.state_of(path, keep=False)
            except (OSError, StoreError) as exc:
                if not _folder_emptied(workspace, change.path, emptied):
                    conflict = Conflict(change.path, f"cannot be read: {exc}", "unsafe")
        if conflict is None and now != expected and not force:
            conflict = Conflict(change.path, _changed(now, expected, direction))
        if conflict is not None:
            report.conflicts.append(conflict)
            continue
        try:
            content = objects.read_blob(target.sha) if target is not None else None
        except StoreError as exc:
            report.conflicts.append(Conflict(change.path, str(exc), "store"))
            continue
        plan.append((change, target, current, content))
    if report.conflicts:
        return report
    report.diff = "".join(
        _diff(change.path, current, content) for change, _, current, content in plan
    )
    report.files = [_restored(change.path, current, target) for change, target, current, _ in plan]
    if dry_run:
        return report
    plan.sort(key=lambda step: step[1] is not None)  # what goes first: a link, a folder
    for change, target, _, content in plan:
        _put(workspace, change.path, target, content)
    store.set_checkpoint_state(row.id, "undone" if direction == "undo" else "done")
    if with_history and direction == "undo":
        report.fork = rewind(store, row)
    return report


REFUSALS: dict[str, str] = {
    "changed": "these files changed since",
    "unsafe": "these paths cannot be written safely",
    "store": "the checkpoint store cannot give these files back (it is damaged)",
}


def refusal(kinds: Iterable[str], direction: str) -> tuple[str, str | None]:
    """What a refused undo says first, and the hint that can help (None: no flag makes
    it go through, so none is suggested), for the kinds of its conflicts."""
    given = set(kinds)
    found = [kind for kind in REFUSALS if kind in given]
    headline = f"not {direction}ne: {'; '.join(REFUSALS[kind] for kind in found)}"
    if found != ["changed"]:
        return headline, None
    later = "undo later turns first" if direction == "undo" else "redo later undos first"
    return headline, f"{later}, or --force to overwrite them"


def rewind(store: SessionStore, row: CheckpointRow) -> str:
    """A fork of the session that ends before the turn's first message; its id."""
    info = store.get(row.session_id)
    messages = store.load_messages(row.session_id)
    first = row.message_id
    if first is None:
        raise SessionError(f"turn {row.turn} has no recorded first message to rewind to")
    before = [m.id for m in messages if m.id < first]
    if before:
        return store.fork(row.session_id, max(before))
    return store.create(info.cwd, info.model)  # the first turn: nothing before it


def _changed(now: FileState | None, expected: FileState | None, direction: Direction) -> str:
    since = "since the turn" if direction == "undo" else "since the undo"
    if now is None:
        return f"deleted {since}"
    if expected is None:
        return f"created {since}"
    if now.sha == expected.sha:
        return f"its mode changed {since}"
    return f"changed {since}"


def _sides(change: FileChange, direction: Direction) -> tuple[FileState | None, FileState | None]:
    """(what the file must be now, what it becomes)."""
    if direction == "undo":
        return change.after, change.before
    return change.before, change.after


def _links_going(
    workspace: Path,
    objects: ObjectStore,
    sides: list[tuple[str, tuple[FileState | None, FileState | None]]],
    force: bool,
) -> set[str]:
    """The symlinks this undo removes that stand where the checkpoint had a folder: the
    turn made them (`rm -rf d && ln -s elsewhere d`), they are as it left them (or
    `force`), so they are removed first (the link, never what it points to) and the
    folder's files are put back in a folder again."""
    going: set[str] = set()
    paths = [change_path for change_path, _ in sides]
    for rel, (expected, target) in sides:
        if target is not None or expected is None or expected.mode != "120000":
            continue
        if not any(other.startswith(rel + "/") for other in paths):
            continue
        if _unsafe(workspace, rel, set()) is not None:
            continue
        try:
            now, _ = objects.state_of(workspace / rel, keep=False)
        except (OSError, StoreError):
            continue
        if now is not None and now.mode == "120000" and (now == expected or force):
            going.add(rel)
    return going


def _under(rel: str, folders: set[str]) -> bool:
    return any(rel.startswith(folder + "/") for folder in folders)


def _folder_emptied(workspace: Path, rel: str, emptied: set[str]) -> bool:
    """Whether `rel` is a folder (not a link) whose every file this undo deletes, so
    that deleting them removes it: a redo of a turn that put a symlink where a folder
    was."""
    folder = workspace / rel
    if folder.is_symlink() or not folder.is_dir():
        return False
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            if Path(root, name).relative_to(workspace).as_posix() not in emptied:
                return False
    return True


def _unsafe(workspace: Path, rel: str, going: set[str]) -> Conflict | None:
    """Why `rel` must not be written through (None when it may): a path that leaves the
    workspace, or a folder on the way that is a file or a symlink (but one in `going`,
    which is removed before anything is written)."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts or ".git" in parts:
        return Conflict(rel, "not a path inside the workspace", "unsafe")
    folder = workspace
    for part in parts[:-1]:
        folder = folder / part
        name = folder.relative_to(workspace).as_posix()
        if name in going:
            return None
        try:
            info = folder.lstat()
        except FileNotFoundError:
            return None  # created when restored
        if stat.S_ISLNK(info.st_mode):
            return Conflict(rel, f"{name} is now a symlink", "unsafe")
        if not stat.S_ISDIR(info.st_mode):
            return Conflict(rel, f"{name} is now a file", "unsafe")
    return None


def _put(workspace: Path, rel: str, target: FileState | None, content: bytes | None) -> None:
    path = workspace / rel
    if target is None or content is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _prune(workspace, path.parent)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.codecoder-undo")
    temp.unlink(missing_ok=True)
    if target.mode == "120000":
        os.symlink(os.fsdecode(content), temp)
    else:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        mode = os.stat(temp).st_mode
        executable = target.mode == "100755"
        bits = mode | 0o111 if executable else mode & ~0o111
        os.chmod(temp, stat.S_IMODE(bits))
    os.replace(temp, path)  # replaces a symlink itself, never what it points to


def _prune(workspace: Path, folder: Path) -> None:
    """Remove the folders a deletion left empty, up to the workspace (the turn made them,
    as a rule: git keeps no empty folder, so we cannot tell an empty one it found)."""
    while folder != workspace and folder.is_relative_to(workspace):
        try:
            folder.rmdir()
        except OSError:  # not empty (or not ours to remove): stop
            return
        folder = folder.parent


def _restored(path: str, current: bytes | None, target: FileState | None) -> Restored:
    if target is None:
        return Restored(path, "deleted")
    return Restored(path, "recreated" if current is None else "restored")


def _diff(path: str, current: bytes | None, content: bytes | None) -> str:
    """A unified diff from the file now to what it becomes. The model names the files: a
    newline in a name would break the header line into a line of its own, so the header
    names it on one line (`visible`, as git quotes such a name). Lines end at LF only,
    as git's do: `splitlines` would also break at U+2028, FF or NEL and report each
    piece as a line with no newline at the end."""
    old, new = _text(current), _text(content)
    name = visible(path, one_line=True)
    if old is None or new is None:
        return f"Binary file {name} differs\n"
    lines = list(
        difflib.unified_diff(
            _lines(old),
            _lines(new),
            fromfile=f"a/{name}" if current is not None else "/dev/null",
            tofile=f"b/{name}" if content is not None else "/dev/null",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines\n"]
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _lines(text: str) -> list[str]:
    """`text` cut after each LF, the last line kept without one if it has none."""
    *ended, last = text.split("\n")
    return [line + "\n" for line in ended] + ([last] if last else [])


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
