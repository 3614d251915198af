"""The local pool: `--parallel N` tasks at a time on this machine.

Each task's `codecoder exec` is its own process, forked from the zygote (ADR 0005); the
pool itself is N threads of the batch process, one per slot, each taking the next task,
running its clone and diff (git child processes) and waiting for its exec. Threads and not
worker processes, because a slot does no Python work worth a core of its own: the CPU is
spent in exec and git, which are processes anyway, and a thread waits on them for
nothing. (A `multiprocessing` pool would add a process and a pickling hop per task and
still have to start exec as a child to kill its tree.)

Events reach the caller on its own thread, in order: `on_started(spec)` when a slot takes
a task, `on_finished(outcome)` when it has a result. `cancel()` from any
thread (the signal watcher) stops the pool taking tasks and cancels the running ones;
called again, it kills them at once. Tasks that never started get no result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from queue import SimpleQueue
from typing import Protocol

from codecoder.batch.launch import Launcher
from codecoder.batch.runner import TaskControl, TaskOutcome, run_task
from codecoder.batch.tasks import TaskSpec
from codecoder.batch.workspace import remove_tree

_Event = tuple[str, TaskSpec | TaskOutcome | BaseException | None]


class Runner(Protocol):
    """What the batch drives: this local pool, or the Ray runner (ray_runner.py)."""

    def run(
        self,
        specs: Sequence[TaskSpec],
        on_started: Callable[[TaskSpec], None],
        on_finished: Callable[[TaskOutcome], None],
    ) -> None:
        """Run the tasks; the callbacks are called on the caller's thread, in order."""
        ...

    def cancel(self) -> None:
        """From any thread: start no more tasks, cancel the running ones (called again:
        kill them)."""
        ...

    def close(self) -> None:
        """Release what the runner holds (the zygote, the Ray connection)."""
        ...


class LocalPool:
    def __init__(self, parallel: int, launcher: Launcher, *, scratch: Path | None = None) -> None:
        self.parallel = max(1, parallel)
        self.launcher = launcher
        self.scratch = scratch
        self._lock = threading.Lock()
        self._controls: set[TaskControl] = set()
        self._cancels = 0
        self._trash: SimpleQueue[Path | None] = SimpleQueue()
        self._janitor = threading.Thread(target=self._remove, name="batch-janitor")
        self._janitor.start()

    def run(
        self,
        specs: Sequence[TaskSpec],
        on_started: Callable[[TaskSpec], None],
        on_finished: Callable[[TaskOutcome], None],
    ) -> None:
        """Run `specs` and return when every started task has its result; an exception
        of the pool's own (never a task's) is raised here once the others are done."""
        events: SimpleQueue[_Event] = SimpleQueue()
        pending = iter(specs)
        slots = [
            threading.Thread(target=self._slot, args=(pending, events), name=f"batch-slot-{n}")
            for n in range(min(self.parallel, len(specs)))
        ]
        for slot in slots:
            slot.start()
        failure: BaseException | None = None
        ended = 0
        while ended < len(slots):
            kind, payload = events.get()
            if kind == "started":
                assert isinstance(payload, TaskSpec)
                on_started(payload)
            elif kind == "finished":
                assert isinstance(payload, TaskOutcome)
                on_finished(payload)
            else:
                ended += 1
                if isinstance(payload, BaseException):
                    failure = failure or payload
                    self.cancel()
        for slot in slots:
            slot.join()
        if failure is not None:
            raise failure

    def cancel(self) -> None:
        with self._lock:
            self._cancels += 1
            hard = self._cancels > 1
            controls = list(self._controls)
        for control in controls:
            control.cancel(hard=hard)

    def close(self) -> None:
        """End the zygote and wait until every task's scratch folder is removed."""
        self.launcher.close()
        self._trash.put(None)
        self._janitor.join()

    def _remove(self) -> None:
        """Scratch folders are removed here, off the slots' way: deleting a clone is
        mostly waiting for the disk (30-120 ms measured under load), which the next
        task's exec can use."""
        while (folder := self._trash.get()) is not None:
            remove_tree(folder)

    def _slot(self, pending: Iterator[TaskSpec], events: SimpleQueue[_Event]) -> None:
        try:
            while (taken := self._take(pending)) is not None:
                spec, control = taken
                events.put(("started", spec))
                try:
                    outcome = run_task(
                        spec, self.launcher, control, scratch=self.scratch, remove=self._trash.put
                    )
                finally:
                    with self._lock:
                        self._controls.discard(control)
                events.put(("finished", outcome))
        except BaseException as exc:  # a bug of ours: stop the batch, say it on the caller's thread
            events.put(("ended", exc))
            return
        events.put(("ended", None))

    def _take(self, pending: Iterator[TaskSpec]) -> tuple[TaskSpec, TaskControl] | None:
        """The next task and its control, registered for cancel() in the same step."""
        with self._lock:
            spec = None if self._cancels else next(pending, None)
            if spec is None:
                return None
            control = TaskControl()
            self._controls.add(control)
            return spec, control
