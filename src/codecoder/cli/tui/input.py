"""The input line: per-project history, completion of slash commands and `@path`.

History lives in `$XDG_DATA_HOME/codecoder/history/`, one file per project (named by a
hash of its real path), loaded on a thread so a long history never delays the prompt.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, ThreadedHistory

from codecoder import paths
from codecoder.cli.tui import attachments
from codecoder.cli.tui.slash import Registry

HISTORY_KEPT = 2000
"""Entries of a project's history kept when it is loaded."""


def history_file(workspace: Path) -> Path:
    digest = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    return paths.data_dir() / "history" / f"{digest}.txt"


def history(workspace: Path) -> History:
    path = history_file(workspace)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        from prompt_toolkit.history import InMemoryHistory

        return InMemoryHistory()
    return ThreadedHistory(_ProjectHistory(str(path)))


class _ProjectHistory(FileHistory):
    """prompt_toolkit's file history, the newest HISTORY_KEPT entries loaded."""

    def load_history_strings(self) -> Iterable[str]:
        return list(super().load_history_strings())[:HISTORY_KEPT]

    def store_string(self, string: str) -> None:
        with contextlib.suppress(OSError):  # a full or read-only disk: no history then
            super().store_string(string)


class InputCompleter(Completer):
    """`/` + command name (and the command's argument), `@` + a path."""

    def __init__(
        self,
        registry: Callable[[], Registry],
        workspace: Callable[[], Path],
        arguments: Callable[[str], list[str]],
    ) -> None:
        self._registry = registry
        self._workspace = workspace
        self._arguments = arguments

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        """A command's name; then, in its arguments as in a message, `@` + a path (a custom
        command's prompt is sent as a message, attachments and all), else the command's
        own argument choices."""
        before = document.text_before_cursor
        slash = before.startswith("/") and "\n" not in before
        if slash and " " not in before:
            yield from self._names(before[1:])
            return
        word = before.rsplit(None, 1)[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            prefix = word[1:]
            for path, is_dir in attachments.complete(prefix, self._workspace()):
                yield Completion(
                    path.replace(" ", "\\ "),
                    start_position=-len(prefix),
                    display=path,
                    display_meta="folder" if is_dir else "attach",
                )
        elif slash:
            yield from self._argument(*before[1:].split(" ", 1))

    def _names(self, name: str) -> Iterable[Completion]:
        for command in self._registry():
            if command.name.startswith(name):
                yield Completion(
                    command.name,
                    start_position=-len(name),
                    display=f"/{command.name}",
                    display_meta=command.summary,
                )

    def _argument(self, name: str, argument: str) -> Iterable[Completion]:
        if " " in argument.strip():
            return
        for choice in self._arguments(name):
            if choice.startswith(argument):
                yield Completion(choice, start_position=-len(argument))
