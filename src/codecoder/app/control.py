"""Wiring what lets the user control a session from outside the loop (issue 18): hooks
(hooks/) and checkpoints (checkpoints/), for build_agent. Neither is kernel code: both
go around tools, or answer the kernel's gate ports, and reach the loop only through its
journal, so a replay neither runs a hook nor takes a checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codecoder import paths
from codecoder.config import ConfigError
from codecoder.kernel.messages import Message
from codecoder.kernel.ports import Tool
from codecoder.sessions import SessionLog, SessionStore

if TYPE_CHECKING:
    from codecoder.checkpoints.record import Checkpoints
    from codecoder.hooks.config import HookSet
    from codecoder.hooks.runner import HookRunner
    from codecoder.sandbox.runtime import Sandbox
    from codecoder.tools.process import ProcessManager


class ControlError(Exception):
    """A hook table that cannot be used (build_agent makes it a WiringError)."""


class TurnLog(SessionLog):
    """The session's HistorySink, noting the id of each turn's first message (what the
    loop commits first once its turn number changed), so an undo with history can fork
    the session just before that turn."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        super().__init__(store, session_id)
        self.turn: Callable[[], int] = lambda: 0
        self._lock = threading.Lock()
        self._firsts: dict[int, int] = {}

    def append(self, message: Message) -> None:
        super().append(message)
        turn = self.turn()
        with self._lock:
            self._firsts.setdefault(turn, message.id)

    def first_message(self, turn: int) -> int | None:
        with self._lock:
            return self._firsts.get(turn)


def hook_set(workspace: Path, user_config: dict[str, Any], trusted: bool) -> HookSet | None:
    """The session's hooks (docs/hooks.md): `[[hooks.*]]` of the user's config, and of a
    trusted project's once approved; None when there are none (and nothing of hooks/ is
    imported). An untrusted folder's files are not read."""
    table = user_config.get("hooks")
    if not (isinstance(table, dict) and table) and not (trusted and _has_project_hooks(workspace)):
        return None
    from codecoder.hooks.config import select

    try:
        found = select(workspace, user_config, trusted=trusted)
    except ConfigError as exc:
        raise ControlError(str(exc)) from exc
    return found if found.hooks or found.left_out else None


def _has_project_hooks(workspace: Path) -> bool:
    folder = paths.project_dir(workspace)
    for name in ("config.toml", "config.local.toml"):
        try:
            if b"hooks" in (folder / name).read_bytes():
                return True
        except OSError:
            continue
    return False


def hook_runner(
    found: HookSet | None,
    manager: ProcessManager,
    workspace: Path,
    session_id: str,
    sandbox: Sandbox,
) -> HookRunner | None:
    """The session's hooks, run in the sandbox its commands get (docs/hooks.md)."""
    if found is None:
        return None
    from codecoder.hooks.runner import HookRunner

    return HookRunner(found, manager, workspace, session_id, sandbox=sandbox)


def checkpoints(
    store: SessionStore,
    session_id: str,
    workspace: Path,
    log: TurnLog,
    user_config: dict[str, Any],
) -> Checkpoints:
    """The session's checkpoints, kept in the session store, in the workspace's object
    store (created at the first change), bounded by the user's `[undo]`."""
    from codecoder.checkpoints import prune
    from codecoder.checkpoints.objects import MB, ObjectStore
    from codecoder.checkpoints.record import Checkpoints, CheckpointSink
    from codecoder.config_schema import UndoTable, section

    limits = section(user_config, "undo", UndoTable)
    objects = ObjectStore(workspace, max_file=limits.max_file_mb * MB)

    def save(turn: int, first: int | None, files: bytes | None) -> None:
        store.save_checkpoint(
            session_id,
            turn,
            message_id=first,
            workspace=workspace,
            store=str(objects.dir),
            files=files,
        )

    def tidy() -> None:
        prune.tidy(objects, store, limits.max_store_mb * MB)

    return Checkpoints(objects, CheckpointSink(save, tidy), first_message=log.first_message)


def tool_wrapper(
    kept: Checkpoints | None, hooks: HookRunner | None
) -> Callable[[list[Tool]], list[Tool]] | None:
    """What goes around every tool, the sub-agents' too: checkpoints inside (a call a
    pre_tool hook blocks takes none), the pre_tool / post_tool hooks outside."""
    wrap_hooks = hooks is not None and (hooks.has("pre_tool") or hooks.has("post_tool"))
    if kept is None and not wrap_hooks:
        return None

    def wrap(tools: list[Tool]) -> list[Tool]:
        if kept is not None:
            from codecoder.checkpoints.record import checkpointed

            tools = checkpointed(tools, kept)
        if wrap_hooks and hooks is not None:
            from codecoder.hooks.bridge import hooked

            tools = hooked(tools, hooks)
        return tools

    return wrap


def prompt_hooks(hooks: HookRunner | None) -> bool:
    return hooks is not None and (hooks.has("session_start") or hooks.has("user_prompt"))
