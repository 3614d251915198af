"""The same tasks as Ray tasks (`codecoder batch --ray auto|ADDRESS`, docs/batch.md).

Ray is an optional extra (`pip install 'codecoder[ray]'`) and this is the only module that
imports it; it is imported only when `--ray` is given (without Ray, importing it raises
ModuleNotFoundError, which the command turns into one line saying what to install).
Each task is one Ray task that runs `runner.run_task` on whichever node Ray picks, with
exec started as a plain subprocess (there is no zygote on a Ray worker), and returns the
TaskOutcome as bytes; the driver writes the results file and the session exports, as
the local pool's driver does.

At most `parallel` tasks are in flight (default: the cluster's CPUs at connect time over
`cpus_per_task`), so the progress line's "running" means what it says and a cancel has
only those to stop; the rest are submitted as results come back.

Cancel. `ray.cancel()` of a running task raises KeyboardInterrupt in it only when its
thread next runs Python code, and a task waiting for its exec is blocked in a lock for as
long as exec runs (measured: a 30 s wait was interrupted after 30 s). So cancel travels
through a small async actor instead, `_CancelSignal`, that each running task waits on
from a thread of its own: `cancel()` there wakes every waiter at once, which cancels its
task exactly as the local pool does (SIGINT to exec's group; the second time SIGKILL).
An actor with async methods is Ray's way to keep thousands of waiting calls cheap; it runs
on Ray's event loop, far from the kernel, which uses no asyncio.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import ray  # pyright: ignore[reportMissingImports]
from ray.exceptions import (  # pyright: ignore[reportMissingImports]
    RayError,
    TaskCancelledError,
)

from codecoder.batch.results import ResultLine, Tokens
from codecoder.batch.runner import TaskControl, TaskOutcome, run_task
from codecoder.batch.tasks import TaskSpec


class RayUnavailable(Exception):
    """Ray is not installed, or no cluster could be reached or started."""


class _CancelSignal:
    """Counts the batch's cancels; `wait(seen)` returns once the count passes `seen`."""

    def __init__(self) -> None:
        self.count = 0
        self.waiters: list[Any] = []

    async def cancel(self) -> int:
        self.count += 1
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.waiters.clear()
        return self.count

    async def wait(self, seen: int) -> int:
        import asyncio

        while self.count <= seen:
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            await waiter
        return self.count


def _run_remote(spec_data: bytes, signal: Any) -> bytes:
    """The Ray task: one task, cancelled through `signal`."""
    from codecoder.batch.launch import SubprocessLauncher

    spec = msgspec.msgpack.decode(spec_data, type=TaskSpec)
    control = TaskControl()
    watcher = _CancelWatcher(signal, control)
    try:
        outcome = run_task(spec, SubprocessLauncher(), control)
    finally:
        watcher.stop()
    return msgspec.msgpack.encode(outcome)


class _CancelWatcher:
    """Waits on the cancel actor from a thread and cancels the task's control."""

    def __init__(self, signal: Any, control: TaskControl) -> None:
        self._signal = signal
        self._control = control
        self._lock = threading.Lock()
        self._waiting: Any = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="batch-cancel-watch")
        self._thread.start()

    def _run(self) -> None:
        seen = 0
        while seen < 2:
            with self._lock:
                if self._stopped:
                    return
                self._waiting = self._signal.wait.remote(seen)
            try:
                seen = int(ray.get(self._waiting))
            except RayError:  # stop() cancelled the wait: the task is over
                return
            self._control.cancel(hard=seen > 1)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            waiting = self._waiting
        if waiting is not None:
            ray.cancel(waiting)
        self._thread.join()


class RayRunner:
    """Runs tasks on a Ray cluster from the driver; see the module's docstring."""

    def __init__(self, *, window: int, cpus_per_task: float, owns_connection: bool) -> None:
        self.window = max(1, window)
        self.cpus_per_task = cpus_per_task
        self._owns_connection = owns_connection
        self._remote = ray.remote(max_retries=0)(_run_remote)
        self._signal: Any = (
            ray.remote(num_cpus=0)(_CancelSignal)
            .options(max_concurrency=max(1000, 2 * self.window))
            .remote()
        )
        self._lock = threading.Lock()
        self._cancels = 0

    @classmethod
    def connect(cls, address: str, *, parallel: int | None, cpus_per_task: float) -> RayRunner:
        """Connect to the cluster at `address` (Ray's `auto`: RAY_ADDRESS, else the
        cluster last started on this machine, else a new local one; `local`: always a
        new local one), unless this process is connected already."""
        owns = not ray.is_initialized()
        if owns:
            try:
                ray.init(
                    address=None if address == "auto" else address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            except Exception as exc:  # Ray's own errors, ConnectionError, ValueError …
                raise RayUnavailable(f"cannot reach Ray at {address}: {exc}") from None
        return cls(
            window=parallel or cluster_slots(cpus_per_task),
            cpus_per_task=cpus_per_task,
            owns_connection=owns,
        )

    def run(
        self,
        specs: Sequence[TaskSpec],
        on_started: Callable[[TaskSpec], None],
        on_finished: Callable[[TaskOutcome], None],
    ) -> None:
        pending = iter(specs)
        in_flight: dict[Any, tuple[TaskSpec, float]] = {}
        while True:
            while len(in_flight) < self.window and not self._cancels:
                spec = next(pending, None)
                if spec is None:
                    break
                ref = self._remote.options(num_cpus=self.cpus_per_task).remote(
                    msgspec.msgpack.encode(spec), self._signal
                )
                in_flight[ref] = (spec, time.monotonic())
                on_started(spec)
            if not in_flight:
                return
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                spec, submitted = in_flight.pop(ref)
                on_finished(self._outcome(ref, spec, submitted))

    @staticmethod
    def _outcome(ref: Any, spec: TaskSpec, submitted: float) -> TaskOutcome:
        try:
            return msgspec.msgpack.decode(ray.get(ref), type=TaskOutcome)
        except TaskCancelledError:
            status, error = "cancelled", "cancelled"
        except RayError as exc:  # the worker died, the node went away
            status, error = "error", f"the Ray task failed: {str(exc).strip()[-500:]}"
        took = round(time.monotonic() - submitted, 3)
        result = ResultLine(spec.task.id, status, None, took, Tokens(), None, "", error=error)
        return TaskOutcome(result)

    def cancel(self) -> None:
        with self._lock:
            self._cancels += 1
        self._signal.cancel.remote()

    def close(self) -> None:
        ray.kill(self._signal)
        if self._owns_connection:
            ray.shutdown()


def cluster_slots(cpus_per_task: float) -> int:
    """Tasks the cluster can run at once now."""
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    return max(1, int(cpus // cpus_per_task))
