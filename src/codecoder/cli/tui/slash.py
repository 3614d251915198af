"""Slash commands: handled by the client, never sent to the model as typed.

A registry other parts can extend (`registry.add(SlashCommand(...))`): the built-ins
(builtin.py) and the custom commands of `.codecoder/commands/*.md` (the project's) and
`$XDG_CONFIG_HOME/codecoder/commands/*.md` (the user's): a Markdown prompt whose
`$ARGUMENTS` is replaced by what follows the command (without it, the arguments are
appended), with optional front matter `description:` and `argument-hint:`. A custom
command sends its prompt as the next message. Built-ins win over custom commands of the
same name, and the project's over the user's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

if TYPE_CHECKING:
    from codecoder.cli.tui.backend import Backend
    from codecoder.sessions.records import SessionInfo

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
MAX_COMMAND_FILE = 256 * 1024


class Host(Protocol):
    """What a command may do with the client (cli/tui/app.py implements it)."""

    workspace: Path

    @property
    def backend(self) -> Backend | None: ...

    def say(self, text: str, *styles: str) -> None: ...

    def say_markdown(self, source: str) -> None: ...

    def say_block(self, lines: list[str]) -> None: ...

    def submit(self, text: str, shown: str) -> None: ...

    def clear(self) -> None: ...

    def quit(self) -> None: ...

    def replace_backend(self, make: Callable[[Backend], Backend], doing: str) -> None: ...

    def compact(self) -> None: ...

    def registry(self) -> Registry: ...

    def usage_text(self) -> str: ...

    def run_plan(self, arguments: str) -> None: ...

    def pick(self, text: str) -> None:
        """Put `text` in an empty input line with its completions open (a picker)."""
        ...

    def choose_session(
        self, sessions: list[SessionInfo], done: Callable[[str | None], None]
    ) -> None:
        """Open the session picker on `sessions`; `done` gets the chosen id, or None."""
        ...


Run = Callable[[Host, str], None]


class SlashCommand(msgspec.Struct, frozen=True):
    name: str
    summary: str
    run: Run
    usage: str = ""
    busy: Literal["now", "after"] = "now"
    """While a turn runs: run at once, or after the turn (what needs an idle agent)."""
    source: str = "built-in"
    aliases: tuple[str, ...] = ()
    arguments: Callable[[Host], list[str]] | None = None
    """Completions of its argument (model names, modes, session ids)."""


class Registry:
    def __init__(self) -> None:
        self._commands: dict[str, SlashCommand] = {}
        self._aliases: dict[str, str] = {}

    def add(self, command: SlashCommand, *, replace: bool = True) -> None:
        if not replace and command.name in self._commands:
            return
        self._commands[command.name] = command
        for alias in command.aliases:
            self._aliases[alias] = command.name

    def get(self, name: str) -> SlashCommand | None:
        return self._commands.get(self._aliases.get(name, name))

    def __iter__(self) -> Iterator[SlashCommand]:
        return iter(sorted(self._commands.values(), key=lambda c: (c.source != "built-in", c.name)))

    def names(self) -> list[str]:
        return sorted([*self._commands, *self._aliases])

    def copy(self) -> Registry:
        copied = Registry()
        copied._commands = dict(self._commands)
        copied._aliases = dict(self._aliases)
        return copied


def parse(text: str) -> tuple[str, str] | None:
    """(name, arguments) of a line that is a slash command; None for other text (`/`
    alone, or a path like `/usr/bin/env …`, which is a message)."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = more + (" " + rest if rest else "")
    if not head or "/" in head:
        return None
    return head, rest.strip()


def expand(template: str, arguments: str) -> str:
    if "$ARGUMENTS" in template:
        return template.replace("$ARGUMENTS", arguments)
    return f"{template.rstrip()}\n\n{arguments}" if arguments else template


Signature = tuple[tuple[str, tuple[tuple[str, int, int], ...] | None], ...]


class CustomCommands:
    """The registry with the custom commands as the folders hold them now: a file added,
    changed or removed while the client runs counts from the next completion or command.

    `current()` is called at each completion of a `/` and each slash command, so it only
    lists the folders (a name, mtime and size per `*.md`, a few stat calls) and reads the
    files again when that listing changed. A new registry is built and swapped in, never
    changed in place, so a reader holding the old one is never disturbed."""

    def __init__(self, base: Registry, folders: Callable[[], list[tuple[Path, str]]]) -> None:
        self._base = base
        self._folders = folders
        self._signature: Signature | None = None
        self._registry = base
        self.warnings: list[str] = []
        """The files the last load could not read."""

    def current(self) -> Registry:
        folders = self._folders()
        signature = tuple((str(folder), _listing(folder)) for folder, _ in folders)
        if signature != self._signature:
            registry = self._base.copy()
            self.warnings = load_custom(registry, folders)
            self._registry, self._signature = registry, signature
        return self._registry


def _listing(folder: Path) -> tuple[tuple[str, int, int], ...] | None:
    try:
        with os.scandir(folder) as entries:
            found = []
            for entry in entries:
                if entry.name.endswith(".md"):
                    try:
                        stat = entry.stat()
                    except OSError:
                        continue
                    found.append((entry.name, stat.st_mtime_ns, stat.st_size))
    except OSError:
        return None
    return tuple(sorted(found))


def load_custom(registry: Registry, folders: list[tuple[Path, str]]) -> list[str]:
    """Add the `*.md` commands of each (folder, source label), the first folder winning;
    returns warnings for files that could not be read."""
    from codecoder.context.frontmatter import FrontMatterError, parse

    warnings: list[str] = []
    for folder, label in folders:
        try:
            files = sorted(folder.glob("*.md"))
        except OSError:
            continue
        for path in files:
            name = path.stem
            if not _NAME.match(name) or registry.get(name) is not None:
                continue
            try:
                data = path.read_bytes()[: MAX_COMMAND_FILE + 1]
                if len(data) > MAX_COMMAND_FILE:
                    raise ValueError("larger than 256 KiB")
                front = parse(data.decode("utf-8", "replace"), str(path))
                summary = front.text("description") or _first_line(front.body)
                hint = front.text("argument-hint") or ""
            except (OSError, ValueError, FrontMatterError) as exc:
                warnings.append(f"{path}: {exc}")
                continue
            registry.add(
                SlashCommand(
                    name,
                    summary,
                    _custom(front.body, name),
                    usage=hint,
                    busy="after",
                    source=label,
                ),
                replace=False,
            )
    return warnings


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text if len(text) <= 70 else text[:69] + "…"
    return "(empty)"


def _custom(template: str, name: str) -> Run:
    def run(host: Host, arguments: str) -> None:
        shown = f"/{name}" + (f" {arguments}" if arguments else "")
        host.submit(expand(template, arguments), shown)

    return run
