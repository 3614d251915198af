"""Writing the two TOML files this package owns, without a TOML writer dependency.

`.codecoder/config.local.toml` may also hold settings the user typed by hand, so a new
rule is spliced into the text (comments and layout survive) and the result is parsed
back and compared before it replaces the file: an edit that would change anything but
the one list is refused rather than written.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from codecoder.config import ConfigError, read_toml

_HEADER = re.compile(r"^[ \t]*\[[ \t]*permissions[ \t]*\][ \t]*(#.*)?$", re.MULTILINE)
_ANY_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)


def toml_string(value: str) -> str:
    """A TOML basic string (control characters and DEL escaped)."""
    out = ['"']
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` in one step (temp file in the same folder, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def add_rule(path: Path, action: str, rule: str) -> None:
    """Append `rule` to `[permissions] <action>` in `path`, keeping everything else."""
    before = read_toml(path)
    table = before.get("permissions", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `permissions` must be a table")
    existing = table.get(action, [])  # type: ignore[union-attr]
    if rule in existing:
        return
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    updated = _splice(text, action, rule)
    expected = _with_rule(before, action, rule)
    try:
        after = tomllib.loads(updated)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise ConfigError(
            f"{path}: could not add {rule!r} to [permissions] {action} automatically; "
            "add it by hand"
        )
    atomic_write(path, updated)


def _with_rule(table: dict[str, Any], action: str, rule: str) -> dict[str, Any]:
    permissions = dict(table.get("permissions", {}))
    permissions[action] = [rule, *permissions.get(action, [])]
    return {**table, "permissions": permissions}


def _splice(text: str, action: str, rule: str) -> str:
    """New rules go first in the list (that is where the splice can be made safely)."""
    if text and not text.endswith("\n"):
        text += "\n"
    entry = f"{action} = [{toml_string(rule)}]\n"
    header = _HEADER.search(text)
    if header is None:
        gap = "\n" if text else ""
        return f"{text}{gap}[permissions]\n{entry}"
    body_start = header.end() + 1
    next_header = _ANY_HEADER.search(text, body_start)
    body_end = next_header.start() if next_header else len(text)
    key = re.compile(rf"^([ \t]*{action}[ \t]*=[ \t]*\[)", re.MULTILINE)
    found = key.search(text, body_start, body_end)
    if found is None:
        return text[:body_start] + entry + text[body_start:]
    return text[: found.end()] + f"{toml_string(rule)}, " + text[found.end() :]
