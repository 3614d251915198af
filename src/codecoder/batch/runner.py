"""One task from start to result, the same in the local pool and in a Ray task: a fresh
clone, `codecoder exec --json` in it with a session store of its own, then the patch, the
tokens and the session export, and the scratch folder removed.

Stopping a task is a signal to its exec's process group, as a terminal would send it:
SIGINT when the batch is cancelled (the agent gets Cancel, its commands' trees die, exec
exits 130), SIGTERM when the task's `timeout` has passed (the same, exit 143), and SIGKILL
`GRACE` seconds later if it is still there; after a SIGKILL, exec's own watchdog kills
its commands' trees, and every process still carrying the task's marker is killed too.
The runner waits on one Event, set by the process's end or by a cancel, never on a clock
in a loop.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from codecoder.batch import output, workspace
from codecoder.batch.launch import Launcher, LaunchError, Running
from codecoder.batch.results import ResultLine, Status, Tokens
from codecoder.batch.tasks import TaskSpec
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGTERM

GRACE = 10.0
"""Seconds a signalled exec has to end its turn before it is killed. exec needs at most
its commands' grace period plus a moment (docs/headless.md)."""
MARKER_VAR = "CODECODER_BATCH_TASK"
"""Carried by every process of a task (unless it clears its environment), so that what a
killed exec left is found."""
STDERR_TAIL = 2000


class TaskOutcome(msgspec.Struct, frozen=True):
    """A task's result and its session export (bytes: a Ray task returns it to the
    driver, which writes it beside the results file)."""

    result: ResultLine
    session: bytes | None = None


class TaskControl:
    """The driver's hold on one running task: cancel() from any thread, once or twice
    (the second time kills at once)."""

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self.cancelled = False
        self.killed = False
        self._running: Running | None = None

    def cancel(self, *, hard: bool = False) -> None:
        with self._lock:
            self.cancelled = True
            self.killed = self.killed or hard
            running = self._running
        if running is not None:
            running.signal(signal.SIGKILL if hard else signal.SIGINT)
        self._wake.set()

    def attach(self, running: Running | None) -> None:
        """The exec now running (None: it has ended); a cancel that came first is sent."""
        with self._lock:
            self._running = running
            cancelled, killed = self.cancelled, self.killed
        if running is not None and cancelled:
            running.signal(signal.SIGKILL if killed else signal.SIGINT)

    def wake(self) -> None:
        self._wake.set()

    def wait(self, timeout: float | None) -> None:
        self._wake.wait(timeout)
        self._wake.clear()


def run_task(
    spec: TaskSpec,
    launcher: Launcher,
    control: TaskControl,
    *,
    scratch: Path | None = None,
    remove: Callable[[Path], None] = workspace.remove_tree,
) -> TaskOutcome:
    """Run one task to its result. Never raises for what a task can do wrong: a clone
    that fails, an exec that cannot start or crashes are an `error` result. Its scratch
    folder (clone, session store, output) is handed to `remove` at the end: the local
    pool removes it on a thread of its own, so that the next task need not wait."""
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="codecoder-batch-", dir=scratch))
    try:
        return _Run(spec, launcher, control, root, started).run()
    finally:
        remove(root)


class _Run:
    def __init__(
        self,
        spec: TaskSpec,
        launcher: Launcher,
        control: TaskControl,
        root: Path,
        started: float,
    ) -> None:
        self.spec = spec
        self.task = spec.task
        self.launcher = launcher
        self.control = control
        self.root = root
        self.started = started
        self.clone = root / "workspace"

    def run(self) -> TaskOutcome:
        if self.control.cancelled:
            return self._outcome("cancelled", None, error="cancelled before it started")
        try:
            base = workspace.clone(self.task.repo, self.task.ref, self.clone)
        except workspace.GitError as exc:
            return self._outcome("error", None, error=str(exc))
        if self.control.cancelled:
            return self._outcome("cancelled", None, error="cancelled before exec started")
        try:
            status, code = self._exec()
        except LaunchError as exc:
            return self._outcome("error", None, error=str(exc))
        run = output.fold(_lines(self.root / "out.jsonl"))
        try:
            patch = workspace.diff(self.clone, base, self.root / "diff.git")
        except workspace.GitError as exc:
            patch, diff_error = "", f"the diff could not be made: {exc}"
        else:
            diff_error = None
        error = self._error(status, code, run) or diff_error
        session = _export(self.root / "data", run.session_id)
        return self._outcome(status, code, run=run, patch=patch, error=error, session=session)

    def _exec(self) -> tuple[Status, int]:
        inputs = self.root / "input"
        inputs.mkdir()
        argv = ["exec", "--json", "-C", str(self.clone)]
        for flag, value in (
            ("-m", self.task.model),
            ("--approval", self.task.approval),
            ("--sandbox", self.task.sandbox),
        ):
            if value is not None:
                argv += [flag, value]
        if self.spec.script is not None:
            argv += ["--script", str(_write(inputs, self.spec.script.name, self.spec.script.data))]
        if self.spec.plan is not None:
            argv += ["--plan", str(_write(inputs, self.spec.plan.name, self.spec.plan.data))]
        else:
            argv += ["--", self.task.task or ""]
        env = workspace.git_environment()
        env["XDG_DATA_HOME"] = str(self.root / "data")
        env[MARKER_VAR] = self.root.name
        running = self.launcher.launch(
            argv,
            env=env,
            cwd=self.clone,
            stdout=self.root / "out.jsonl",
            stderr=self.root / "err.txt",
            on_exit=self.control.wake,
        )
        self.control.attach(running)
        try:
            return self._supervise(running)
        finally:
            self.control.attach(None)

    def _supervise(self, running: Running) -> tuple[Status, int]:
        timeout = self.task.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = False
        kill_at: float | None = None  # set once the task was told to stop
        while (code := running.returncode()) is None:
            now = time.monotonic()
            if kill_at is None:
                if deadline is not None and now >= deadline:
                    timed_out = True
                    running.signal(signal.SIGTERM)
                    kill_at = now + GRACE
                elif self.control.cancelled:  # its SIGINT was sent by the control
                    kill_at = now + GRACE
            elif now >= kill_at:
                running.signal(signal.SIGKILL)
                kill_at = now + GRACE
            wake_at = deadline if kill_at is None else kill_at
            self.control.wait(None if wake_at is None else max(0.0, wake_at - now))
        if code < 0 or kill_at is not None:
            _kill_marked(self.root.name)
        if timed_out:
            return "timeout", _exit_code(code)
        if self.control.cancelled and code != EXIT_OK:
            return "cancelled", _exit_code(code)
        return _status(code), _exit_code(code)

    def _error(self, status: Status, code: int, run: output.RunOutput) -> str | None:
        if status == "passed":
            return None
        if status == "timeout":
            return f"timed out after {self.task.timeout:g} s"
        if status == "cancelled":
            return "cancelled"
        if run.error:
            return run.error
        said = _tail(self.root / "err.txt")
        if said:
            return said
        return f"codecoder exec ended with exit code {code}"

    def _outcome(
        self,
        status: Status,
        code: int | None,
        *,
        run: output.RunOutput | None = None,
        patch: str = "",
        error: str | None = None,
        session: bytes | None = None,
    ) -> TaskOutcome:
        result = ResultLine(
            id=self.task.id,
            status=status,
            exit_code=code,
            duration_s=round(time.monotonic() - self.started, 3),
            tokens=run.tokens if run is not None else Tokens(),
            cost=run.total_cost() if run is not None else None,
            diff=patch,
            gates=run.gates if run is not None and self.spec.plan is not None else None,
            error=error,
        )
        return TaskOutcome(result, session)


def _status(code: int) -> Status:
    """A run that ended on its own: 0 passed (for a plan: every milestone's gates
    passed), 1 failed, 2 a task exec refused (usage, configuration), 129/130/143 stopped
    by a signal from elsewhere, anything else (killed, crashed) an error."""
    if code == EXIT_OK:
        return "passed"
    if code == EXIT_FAILED:
        return "failed"
    if code in (EXIT_SIGINT, EXIT_SIGTERM, EXIT_SIGHUP):
        return "cancelled"
    return "error"


def _exit_code(code: int) -> int:
    """As a shell reports it: 128 + N for a process killed by signal N."""
    return 128 - code if code < 0 else code


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _lines(path: Path) -> list[bytes]:
    try:
        return path.read_bytes().splitlines()
    except OSError:
        return []


def _tail(path: Path) -> str:
    """The last line exec wrote on stderr (its one-line failure message)."""
    try:
        text = path.read_bytes()[-STDERR_TAIL:].decode(errors="replace")
    except OSError:
        return ""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _export(data_home: Path, session_id: str | None) -> bytes | None:
    """The session as `codecoder sessions export --format jsonl` writes it."""
    store_file = data_home / "codecoder" / "sessions.sqlite3"
    if session_id is None or not store_file.exists():
        return None
    from codecoder.sessions import SessionError, SessionStore
    from codecoder.sessions.export import jsonl

    try:
        with SessionStore(store_file) as store:
            return b"".join(jsonl(store.load_messages(session_id)))
    except (SessionError, OSError):
        return None


def _kill_marked(marker: str) -> None:
    """SIGKILL every process that still carries the task's marker (left by an exec that
    was killed, or escaped from its group)."""
    needle = f"{MARKER_VAR}={marker}\0".encode()
    for _ in range(3):  # a forking leftover may add one while we look
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as file:
                    if needle in file.read():
                        found.append(int(name))
            except OSError:
                continue
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
