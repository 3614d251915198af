"""Writing the files this package owns, without a TOML writer dependency: the two TOML
files (`config.local.toml`, `trusted.toml`) and the .gitignore line that keeps
`config.local.toml` out of git.

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
from typing import Any, Literal

from codecoder import paths
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


# --- keeping config.local.toml out of git ------------------------------------------------

LOCAL_FILE = ".codecoder/config.local.toml"
IgnorePlan = Literal["ignored", "create", "append", "tracked"]


def ignore_plan(workspace: Path) -> IgnorePlan:
    """What keeping `.codecoder/config.local.toml` out of git takes in `workspace`:
    nothing (a .gitignore already covers it), creating `.gitignore`, appending to one
    outside any git repository, or changing one inside a repository ("tracked": we do
    not run git to check, so a .gitignore in a repository counts as tracked)."""
    workspace = workspace.resolve()
    if _is_ignored(workspace):
        return "ignored"
    if not (workspace / ".gitignore").exists():
        return "create"
    return "tracked" if _repository_root(workspace) is not None else "append"


def ignore_local_file(workspace: Path, *, edit_tracked: bool = False) -> Path | None:
    """Make git ignore `.codecoder/config.local.toml` (called when it is first written);
    returns the file changed, None when nothing needed changing. A tracked .gitignore is
    changed only with `edit_tracked` (the user said yes); otherwise the line goes into
    `.codecoder/.gitignore`, which touches no tracked file."""
    workspace = workspace.resolve()
    plan = ignore_plan(workspace)
    if plan == "ignored":
        return None
    if plan == "tracked" and not edit_tracked:
        target, line = paths.project_dir(workspace) / ".gitignore", "config.local.toml"
    else:
        target, line = workspace / ".gitignore", LOCAL_FILE
    try:
        _append_line(target, line)
    except OSError as exc:
        raise ConfigError(
            f"cannot add {LOCAL_FILE} to {target}: {exc.strerror} (the rule itself was saved)"
        ) from exc
    return target


def _append_line(target: Path, line: str) -> None:
    text = target.read_text(encoding="utf-8", errors="replace") if target.exists() else ""
    with target.open("a", encoding="utf-8") as handle:
        if text and not text.endswith("\n"):
            handle.write("\n")
        if not text:
            handle.write('# CodeCoder: this machine\'s answers ("always for this project")\n')
        handle.write(line + "\n")


def _repository_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _is_ignored(workspace: Path) -> bool:
    """Whether a .gitignore from the workspace up to its repository root (the rules git
    applies: last match wins, `!` re-includes) or `.codecoder/.gitignore` ignores the
    local file. Best effort: global excludes and `info/exclude` are not read."""
    if _ignores(paths.project_dir(workspace) / ".gitignore", "config.local.toml"):
        return True
    root = _repository_root(workspace) or workspace
    folders = [workspace, *workspace.parents]
    for folder in folders[: folders.index(root) + 1]:
        relative = (workspace / LOCAL_FILE).relative_to(folder).as_posix()
        if _ignores(folder / ".gitignore", relative):
            return True
    return False


def _ignores(gitignore: Path, relative: str) -> bool:
    try:
        lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    from fnmatch import fnmatchcase

    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for raw in lines:
        pattern = raw.rstrip()
        if not pattern or pattern.startswith("#"):
            continue
        negated = pattern.startswith("!")
        pattern = pattern.removeprefix("!")
        folder_only = pattern.endswith("/")
        pattern = pattern.rstrip("/")
        anchored = "/" in pattern
        pattern = pattern.lstrip("/")
        for index, prefix in enumerate(prefixes):
            if folder_only and index == len(prefixes) - 1:
                continue
            name = prefix if anchored else parts[index]
            if fnmatchcase(name, pattern):
                ignored = not negated
                break
    return ignored
