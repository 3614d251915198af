"""`@path` in a message attaches the file: its content goes with the message, tagged with
the path (the same form ACP's embedded resources take, daemon/acp.py), so the model
need not read it with a tool. A folder, a missing path, a binary or a large file stays
as typed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec

MAX_ATTACHED_FILE = 256 * 1024
MAX_COMPLETIONS = 60
_MENTION = re.compile(r"(?:(?<=\s)|^)@((?:[^\s\\]|\\ )+)")


class Attached(msgspec.Struct, frozen=True):
    path: str
    lines: int


def expand(text: str, workspace: Path) -> tuple[str, list[Attached], list[str]]:
    """The message with each mentioned file's content appended, the files attached, and
    what was mentioned but not attached (with why)."""
    blocks: list[str] = []
    attached: list[Attached] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for match in _MENTION.finditer(text):
        shown = match.group(1).replace("\\ ", " ").rstrip(".,;:!?)")
        if shown in seen:
            continue
        seen.add(shown)
        path = _resolve(shown, workspace)
        if path is None or not path.is_file():
            continue
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_ATTACHED_FILE + 1)
        except OSError as exc:
            skipped.append(f"{shown}: {exc.strerror or exc}")
            continue
        if len(data) > MAX_ATTACHED_FILE:
            skipped.append(f"{shown}: larger than 256 KiB (the model can read it with a tool)")
            continue
        if b"\x00" in data:
            skipped.append(f"{shown}: not a text file")
            continue
        content = data.decode("utf-8", "replace")
        blocks.append(f'<file path="{shown}">\n{content}\n</file>')
        attached.append(Attached(shown, content.count("\n") + (0 if content.endswith("\n") else 1)))
    if not blocks:
        return text, attached, skipped
    return text + "\n\n" + "\n\n".join(blocks), attached, skipped


_BLOCK = re.compile(r'\n\n<file path="([^"\n]*)">\n')
_END = "\n</file>"


def typed(message: str) -> tuple[str, list[Attached]]:
    """A stored message taken apart again: the text as it was typed (its `@path`
    mentions) and the files `expand` appended, so that a transcript shows what the
    person wrote, not the files' content tagged `<file …>`. Text that only looks like
    an attachment (no `@` mention of that path before it) is left as it is. A file's
    content that forges the start of a later file's block can only make the counts of
    lines wrong: the typed text ends where the first block starts."""
    if not message.endswith(_END):
        return message, []
    for match in _BLOCK.finditer(message):
        head = message[: match.start()]
        mentioned = {
            m.group(1).replace("\\ ", " ").rstrip(".,;:!?)") for m in _MENTION.finditer(head)
        }
        if match.group(1) not in mentioned:
            continue
        starts = [match]
        for later in _BLOCK.finditer(message, match.end()):
            path = later.group(1)
            if (
                message[: later.start()].endswith(_END)
                and path in mentioned
                and path not in {s.group(1) for s in starts}
            ):
                starts.append(later)
        ends = [s.start() - len(_END) for s in starts[1:]] + [len(message) - len(_END)]
        attached = []
        for start, end in zip(starts, ends, strict=True):
            content = message[start.end() : end]
            lines = content.count("\n") + (0 if content.endswith("\n") else 1)
            attached.append(Attached(start.group(1), lines))
        return head, attached
    return message, []


def _resolve(shown: str, workspace: Path) -> Path | None:
    if not shown:
        return None
    expanded = Path(os.path.expanduser(shown))
    return expanded if expanded.is_absolute() else workspace / expanded


def complete(prefix: str, workspace: Path) -> list[tuple[str, bool]]:
    """Paths that complete `prefix` (what follows the `@`): (path, is a folder), folders
    ending with `/`; hidden entries only when the prefix asks for them."""
    folder_part, slash, name_part = prefix.rpartition("/")
    folder = folder_part + slash
    base = _resolve(folder, workspace) if folder else workspace
    if base is None:
        return []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    found: list[tuple[str, bool]] = []
    for entry in entries:
        if not entry.name.startswith(name_part):
            continue
        if entry.name.startswith(".") and not name_part.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        found.append((f"{folder}{entry.name}{'/' if is_dir else ''}", is_dir))
        if len(found) >= MAX_COMPLETIONS:
            break
    return found
