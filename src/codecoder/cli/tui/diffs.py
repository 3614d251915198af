"""Unified diffs of edits and writes: what a confirmation approves (the file as it is and
as the call would leave it) and what a finished call changed (the file before the call
and after it; for an edit whose before was not caught in time, rebuilt from its
arguments)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Literal

import msgspec

MAX_FILE = 2 * 1024 * 1024
"""Files larger than this are not read for a diff (the call's own text is shown)."""
SHOWN_LINES = 60
"""Diff lines shown after an edit; the rest are counted."""

LineKind = Literal["meta", "hunk", "add", "remove", "context"]
FILE_TOOLS = ("edit_file", "write_file")


class Diff(msgspec.Struct, frozen=True):
    path: str
    lines: tuple[tuple[LineKind, str], ...]
    added: int
    removed: int
    created: bool = False

    @property
    def empty(self) -> bool:
        return not self.added and not self.removed


def target(args: dict[str, Any], workspace: Path) -> Path | None:
    path = args.get("path")
    if not isinstance(path, str) or not path:
        return None
    expanded = Path(os.path.expanduser(path))
    return expanded if expanded.is_absolute() else workspace / expanded


def read_text(path: Path | None) -> str | None:
    """The file's text; None when it does not exist, is too large, or is not text."""
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE or b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


def unified(before: str, after: str, path: str, *, created: bool = False) -> Diff:
    """The diff of `before` and `after`, numbered as read_file and edit_file number
    lines."""
    old = _lines(before)
    new = _lines(after)
    lines: list[tuple[LineKind, str]] = []
    added = removed = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=3):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(("hunk", line))
        elif line.startswith("+"):
            lines.append(("add", line))
            added += 1
        elif line.startswith("-"):
            lines.append(("remove", line))
            removed += 1
        else:
            lines.append(("context", line))
    return Diff(path, tuple(lines), added, removed, created)


def _lines(text: str) -> list[str]:
    """`text`'s lines, split on \\n only (str.splitlines also splits on \\f, U+2028 and
    others, which would number every hunk after one wrongly)."""
    parts = [part.removesuffix("\r") for part in text.split("\n")]
    return parts[:-1] if text.endswith("\n") or not text else parts


def applied(name: str, args: dict[str, Any], before: str | None) -> str | None:
    """The file's text after the call, computed from its arguments."""
    if name == "write_file":
        content = args.get("content")
        return content if isinstance(content, str) else None
    old, new = args.get("old_text"), args.get("new_text")
    if before is None or not isinstance(old, str) or not isinstance(new, str) or not old:
        return None
    if old not in before:
        return None
    return before.replace(old, new) if args.get("replace_all") else before.replace(old, new, 1)


def proposed(name: str, args: dict[str, Any], workspace: Path) -> Diff | None:
    """What an edit or write asking for approval would change."""
    if name not in FILE_TOOLS:
        return None
    path = target(args, workspace)
    before = read_text(path)
    after = applied(name, args, before if name == "edit_file" else before or "")
    shown = str(args.get("path"))
    if after is None:
        old, new = args.get("old_text"), args.get("new_text")
        if isinstance(old, str) and isinstance(new, str):  # the text was not found: as given
            return unified(old, new, shown)
        return None
    return unified(before or "", after, shown, created=before is None and name == "write_file")


class Snapshots:
    """The text of each file an edit or write is about to change, taken when the call
    starts; at its end, the diff of what it changed."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._before: dict[str, tuple[str, dict[str, Any], str | None]] = {}

    def started(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        if name in FILE_TOOLS:
            self._before[call_id] = (name, args, read_text(target(args, self.workspace)))

    def finished(self, call_id: str, ok: bool) -> Diff | None:
        taken = self._before.pop(call_id, None)
        if taken is None or not ok:
            return None
        name, args, before = taken
        path = target(args, self.workspace)
        after = read_text(path)
        if after is None:
            return None
        shown = str(args.get("path"))
        if before == after and name == "edit_file":
            before = _undone(args, after)  # changed before we looked: rebuilt from the call
        if before is None and name == "write_file":
            return unified("", after, shown, created=True)
        return unified(before or "", after, shown) if before is not None else None


def _undone(args: dict[str, Any], after: str) -> str | None:
    old, new = args.get("old_text"), args.get("new_text")
    if not isinstance(old, str) or not isinstance(new, str) or not new:
        return None
    if args.get("replace_all"):
        return after.replace(new, old)
    return after.replace(new, old, 1) if after.count(new) == 1 else None
