"""Taking checkpoints: what each turn changed, kept as it goes (docs/undo.md).

A turn's checkpoint is, for every file it changed, the file before the turn first
changed it and after the turn last did. `CheckpointedTool` takes it around the tools
that change files:

- `write_file`, `edit_file`: the file is read before the call and after it; if it
  changed, both contents are kept as blobs (no git process).
- `run_command`: the work tree is snapshotted before the command (staged into our own
  index in one walk, objects.py `stage`, and a copy of the index) and after it (staged
  again, `diff-index` against the copy's tree), and what differs is kept. Only the first
  staging is on the turn's path; the rest is done on a thread of its own: the copy's
  `write-tree` while the command runs, the snapshot after it while the turn goes on (the
  model reads the result meanwhile), and the next call that may change a file waits for
  it. Only the snapshots hold the object store's lock: commands run in parallel
  (sub-agents) and each records what changed between its two snapshots; a path already
  in the turn's checkpoint keeps its first "before". A command the sandbox confines
  read-only (a read-only session, or a line that only reads in a workspace-write one)
  takes none: it cannot change the work tree (run_command decides it with the
  confinement, tools/shell.py).

A file changed and changed back within a turn drops out; a turn with nothing left keeps
no row. A failure to keep a checkpoint never fails the call: the model's work goes on,
and one `checkpoint` status line says that /undo will not cover that command (or file).
A failure of the snapshot after a command is found off the turn's path, so it is said
where the loop looks next (`CheckpointNotices`: before the next request or the turn's
Done) or at the next call that may change a file, whichever comes first; one found after
the session's last turn ended is left to `unsaid` (exec prints it).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from codecoder.checkpoints.objects import (
    LOCK_POLL,
    Change,
    FileState,
    ObjectStore,
    StoreError,
    TooLarge,
)
from codecoder.kernel.cancel import Cancelled
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import HistoryUnavailable, Tool, ToolContext, ToolSource
from codecoder.tools.base import ToolWrapper

FILE_TOOLS = frozenset({"write_file", "edit_file"})
COMMAND_TOOLS = frozenset({"run_command"})


class FileChange(msgspec.Struct, frozen=True, omit_defaults=True):
    """One file a turn changed: as it was before (None: it did not exist) and after;
    `lost` says why the turn cannot be undone for it (it was over `[undo] max_file_mb`
    at some point of the turn, so a state of it was never kept)."""

    path: str
    before: FileState | None
    after: FileState | None
    lost: str = ""


_changes = msgspec.json.Encoder()
_decode_changes = msgspec.json.Decoder(list[FileChange]).decode


def encode_changes(changes: list[FileChange]) -> bytes:
    return _changes.encode(changes)


def decode_changes(body: bytes) -> list[FileChange]:
    return _decode_changes(body)


class CheckpointSink(msgspec.Struct):
    """Where a session's checkpoints go: the session store's row for each turn."""

    save: Callable[[int, int | None, bytes | None], None]
    """(turn, the turn's first message id, the changes as JSON or None: none left)."""
    tidy: Callable[[], object] = lambda: None
    """At the session's end: keep the object store bounded (checkpoints/prune.py)."""


class Checkpoints:
    """The checkpoints of one session in one workspace. `turn` says the running turn,
    `first_message(turn)` the id of its first message (for rewinding the history)."""

    def __init__(
        self,
        objects: ObjectStore,
        sink: CheckpointSink,
        *,
        turn: Callable[[], int] = lambda: 0,
        first_message: Callable[[int], int | None] = lambda turn: None,
    ) -> None:
        self.objects = objects
        self.sink = sink
        self.turn = turn
        self.first_message = first_message
        self._lock = threading.Lock()
        self._turn = -1
        self._changes: dict[str, FileChange] = {}
        self._after: list[threading.Thread] = []
        """Snapshots after commands, still being taken (off the turn's path)."""
        self._failed: list[str] = []
        """Commands whose snapshot after them failed, not said yet: each is said once,
        through the loop (`take_notices`, `settle`), so the record and a replay see it
        where the live run did."""

    # --- around a call ---------------------------------------------------------------------

    def around_file(
        self, path: Path, run: Callable[[], ToolResult], ctx: ToolContext
    ) -> ToolResult:
        """Run a file tool that may change `path`, keeping the file before and after."""
        self.settle(ctx)
        rel = self._relative(path)
        if rel is None:
            return run()
        try:
            before, old = self.objects.state_of(path, keep=False)
        except TooLarge:
            return self._around_large(path, rel, run)
        except (OSError, StoreError):
            return run()  # not a file we could restore (a folder): the tool says why
        try:
            use = self.objects.using(ctx.cancel)
        except (OSError, StoreError) as exc:
            _say(ctx, f"no checkpoint of {rel} ({exc}): /undo will not restore it")
            return run()
        try:
            return run()
        finally:
            try:
                after, _ = self.objects.state_of(path, keep=True)
                if after != before:
                    if old is not None:
                        self.objects.write_blob(old)
                    self._note([(rel, before, after)], self.turn())
            except TooLarge:
                self._note([], self.turn(), lost=[(rel, before, None)])
            except (OSError, StoreError, HistoryUnavailable) as exc:
                _say(ctx, f"no checkpoint of {rel} ({exc}): /undo will not restore it")
            finally:
                os.close(use)  # its objects are in the row now

    def _around_large(self, path: Path, rel: str, run: Callable[[], ToolResult]) -> ToolResult:
        """A file tool on a file over the limit: its content is never read here; if the
        call changed it, the checkpoint says it cannot be undone."""
        seen = _stat(path)
        try:
            return run()
        finally:
            if _stat(path) != seen:
                self._note([], self.turn(), lost=[(rel, None, None)])

    def around_command(
        self, run: Callable[[], ToolResult], ctx: ToolContext, *, command: str = ""
    ) -> ToolResult:
        """Run a command, keeping what it changed in the work tree. The snapshot before
        it is taken first (one walk of the work tree); the rest on a thread of its own:
        the tree of that snapshot while the command runs, the snapshot after it and the
        diff once it is done, so the turn does not wait for them: the next call that may
        change a file, an undo and the session's end wait for them instead."""
        self.settle(ctx)
        use: int | None = None
        try:
            use = self.objects.using(ctx.cancel)
            with self.objects.locked(ctx.cancel):
                before = self.objects.index_now(ctx.cancel)
        except (OSError, StoreError) as exc:
            if use is not None:
                os.close(use)
            _say(ctx, f"no checkpoint of this command ({exc}): {NOT_COVERED}")
            return run()
        except BaseException:
            if use is not None:
                os.close(use)
            raise
        ended = threading.Event()
        after = threading.Thread(
            target=self._take_after,
            args=(before, self.turn(), ended, _brief(command), use),
            name="checkpoint-after",
        )
        after.start()  # writes the tree of `before` while the command runs
        try:
            return run()
        finally:
            ended.set()
            with self._lock:  # only now: nobody waits for it while the command runs
                self._after.append(after)

    def _take_after(
        self, before: Path, turn: int, ended: threading.Event, command: str, use: int
    ) -> None:
        """The rest of a command's checkpoint (see `around_command`); the store stays
        in use (`use`, closed here) until its row is saved."""
        try:
            with self.objects.locked():
                tree = self.objects.tree_of(before)
            ended.wait()
            with self.objects.locked():
                changed, lost = self.objects.changes_since(tree)
            self._note(changed, turn, lost=lost)
        except (OSError, StoreError, HistoryUnavailable) as exc:
            line = f"no checkpoint of the command {command} ({exc}): {NOT_COVERED}"
            with self._lock:
                self._failed.append(line)
        finally:
            os.close(use)

    def settle(self, ctx: ToolContext | None = None) -> None:
        """Wait for the snapshots after commands still being taken; a failure among them
        is said on `ctx`. A cancel of `ctx`'s turn ends the wait (raises Cancelled); the
        snapshots go on, and the next settle (the session's end) waits for them."""
        with self._lock:
            pending, self._after = self._after, []
        for index, thread in enumerate(pending):
            while ctx is not None and thread.is_alive():
                thread.join(LOCK_POLL)
                if ctx.cancel.is_cancelled():
                    with self._lock:
                        self._after[:0] = pending[index:]
                    raise Cancelled(ctx.cancel.reason)
            thread.join()
        if ctx is not None:
            for line in self.take_notices():
                _say(ctx, line.detail)

    def take_notices(self) -> list[StatusUpdate]:
        """The failures of snapshots after commands found so far and not said yet (never
        waits for one still being taken)."""
        with self._lock:
            failed, self._failed = self._failed, []
        return [StatusUpdate("running_tool", line, notice="checkpoint") for line in failed]

    def close(self) -> None:
        """The session ends: what is still being taken is kept first, then the store is
        pruned if it grew enough (a failure is left to the next session's end)."""
        self.settle()
        with contextlib.suppress(OSError, StoreError, HistoryUnavailable):
            self.sink.tidy()

    def with_notices(self, inner: ToolSource | None) -> ToolSource:
        """`inner` (the session's other ToolSource) with these checkpoints' notices."""
        return CheckpointNotices(self, inner)

    def unsaid(self) -> list[str]:
        """After `close`: the failures found when no turn was left to say them."""
        return [notice.detail for notice in self.take_notices()]

    # --- the turn's changes ----------------------------------------------------------------

    def _note(self, changed: list[Change], turn: int, *, lost: Sequence[Change] = ()) -> None:
        """Add what a call changed to the turn's checkpoint, and save it; `lost`: the
        files over the limit it changed (the first state kept, if any, stays)."""
        kept = [(p, b, a) for p, b, a in changed if _restorable(b) and _restorable(a)]
        if not kept and not lost:
            return
        with self._lock:
            if turn != self._turn:
                self._turn, self._changes = turn, {}
            for path, before, after in kept:
                first = self._changes.get(path)
                start = first.before if first is not None else before
                if first is not None and first.lost:
                    self._changes[path] = FileChange(path, start, after, first.lost)
                elif start == after:
                    self._changes.pop(path, None)  # changed back: nothing to undo
                else:
                    self._changes[path] = FileChange(path, start, after)
            for path, before, _ in lost:
                first = self._changes.get(path)
                start = first.before if first is not None else before
                why = self.objects.too_large()
                self._changes[path] = FileChange(
                    path, start if _restorable(start) else None, None, why
                )
            changes = sorted(self._changes.values(), key=lambda c: c.path)
            body = encode_changes(changes) if changes else None
            self.sink.save(turn, self.first_message(turn), body)

    def _relative(self, path: Path) -> str | None:
        """`path` relative to the workspace (as the tool will resolve it), or None when
        it is outside or in a `.git` folder (never ours to restore)."""
        real = Path(os.path.realpath(path))
        try:
            rel = real.relative_to(self.objects.workspace)
        except ValueError:
            return None
        if not rel.parts or ".git" in rel.parts:
            return None
        return rel.as_posix()


class CheckpointNotices:
    """A ToolSource whose tools are `inner`'s (none without one) and whose notices add
    the commands whose checkpoint was lost (`Checkpoints.take_notices`)."""

    def __init__(self, checkpoints: Checkpoints, inner: ToolSource | None) -> None:
        self.checkpoints = checkpoints
        self.inner = inner

    def tools(self) -> Sequence[Tool]:
        return self.inner.tools() if self.inner is not None else ()

    def notices(self) -> Sequence[StatusUpdate]:
        found = list(self.inner.notices()) if self.inner is not None else []
        return found + self.checkpoints.take_notices()  # the loop says them in its state


NOT_COVERED = "/undo will not restore what it changed"
BRIEF = 60
"""Characters of a command that name it in a notice."""


def _brief(command: str) -> str:
    line = " ".join(command.split())
    return f"`{line[: BRIEF - 1]}…`" if len(line) > BRIEF else f"`{line}`"


def _say(ctx: ToolContext, line: str) -> None:
    ctx.emit(StatusUpdate("running_tool", line, notice="checkpoint"))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def _restorable(state: FileState | None) -> bool:
    return state is None or state.mode in ("100644", "100755", "120000")


class CheckpointedTool(ToolWrapper):
    """`tool` with the session's checkpoints taken around each call that may change
    files (write_file, edit_file, run_command); other tools are returned unwrapped by
    `checkpointed`."""

    def __init__(self, tool: Tool, checkpoints: Checkpoints) -> None:
        super().__init__(tool)
        self.checkpoints = checkpoints

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        def call() -> ToolResult:
            return self.tool.run(args, ctx)

        if self.name in COMMAND_TOOLS:
            from codecoder.tools.shell import RunCommand

            command = str(args.get("command", ""))

            def around(run: Callable[[], ToolResult], ctx: ToolContext) -> ToolResult:
                return self.checkpoints.around_command(run, ctx, command=command)

            if isinstance(self.tool, RunCommand):  # it knows whether the command can write
                return self.tool.run(args, ctx, around=around)
            return around(call, ctx)
        path = args.get("path")
        if not isinstance(path, str) or "\0" in path:
            return call()
        from codecoder.boundary import resolve

        try:
            target = resolve(ctx.workspace, path)
        except ValueError:
            return call()
        return self.checkpoints.around_file(target, call, ctx)


def checkpointed(tools: list[Tool], checkpoints: Checkpoints) -> list[Tool]:
    return [
        CheckpointedTool(tool, checkpoints) if tool.name in FILE_TOOLS | COMMAND_TOOLS else tool
        for tool in tools
    ]
