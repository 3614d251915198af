"""`codecoder batch TASKS.jsonl`: many tasks, each in a fresh clone, on a local pool or
on Ray (docs/batch.md). This module is imported to build the command line, so it imports
nothing of the batch until the command runs.

Exit codes: 0 every task of the file has passed (counting those an earlier run finished,
with --resume), 1 some task did not, 2 the tasks or results file cannot be used (nothing
ran), 130/143/129 the batch was interrupted (SIGINT/SIGTERM/SIGHUP) and its running tasks
cancelled.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from codecoder.exitcodes import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SIGHUP,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
)
from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from codecoder.batch.pool import Runner
    from codecoder.batch.results import ResultLine, ResultsWriter
    from codecoder.batch.runner import TaskOutcome
    from codecoder.batch.tasks import TaskSpec


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    batch = subparsers.add_parser(
        "batch",
        help="run many tasks, each in a fresh clone, on a local pool or a Ray cluster",
        description="Run every task of TASKS.jsonl (one JSON object per line: id, repo, "
        "task or plan, …; docs/batch.md), each in a fresh clone of its repository with "
        "codecoder exec --json, and append one result line per task to the results file.",
    )
    batch.add_argument("tasks", metavar="TASKS.jsonl", help="the tasks, one JSON object per line")
    batch.add_argument(
        "-o",
        "--output",
        metavar="RESULTS.jsonl",
        help="the results file (default: TASKS.results.jsonl beside the tasks file)",
    )
    batch.add_argument(
        "--parallel",
        type=_positive,
        metavar="N",
        help="tasks at once (default: this machine's cores; with --ray, the cluster's CPUs)",
    )
    batch.add_argument(
        "--ray",
        metavar="auto|ADDRESS",
        help="run the tasks as Ray tasks: on the cluster at ADDRESS, or with auto on "
        "RAY_ADDRESS's cluster, else a local Ray started for the run (pip install "
        "'codecoder[ray]')",
    )
    batch.add_argument(
        "--cpus-per-task",
        type=_positive_float,
        metavar="N",
        help="with --ray: CPUs Ray reserves for each task (default 1)",
    )
    batch.add_argument(
        "--resume",
        action="store_true",
        help="go on with an existing results file: run only the tasks it has no final "
        "result for (a cancelled task runs again)",
    )
    batch.set_defaults(func=batch_cmd)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (it is {value})")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 (it is {text})")
    return value


_SIGNAL_EXITS: dict[int, int] = {
    signal.SIGINT: EXIT_SIGINT,
    signal.SIGTERM: EXIT_SIGTERM,
    signal.SIGHUP: EXIT_SIGHUP,
}


def batch_cmd(args: argparse.Namespace) -> int:
    from codecoder.batch.results import FINAL, ResultsError, read_done
    from codecoder.batch.tasks import TasksError, load_tasks

    tasks_path = Path(args.tasks)
    results_path = Path(args.output) if args.output else _default_results(tasks_path)
    if args.ray is None and args.cpus_per_task is not None:
        print("codecoder batch: --cpus-per-task applies to --ray", file=sys.stderr)
        return EXIT_USAGE
    try:
        specs = load_tasks(tasks_path)
        if not results_path.absolute().parent.is_dir():
            raise ResultsError(f"{results_path}: no such folder")
        if not args.resume and results_path.exists() and results_path.stat().st_size:
            raise ResultsError(
                f"{results_path} already has results: --resume goes on with it "
                "(or remove it, or name another with -o)"
            )
        done = read_done(results_path) if args.resume else {}
    except (TasksError, ResultsError) as exc:
        for line in str(exc).split("\n"):  # a problem a line, each quoting the file as it is
            print(f"codecoder batch: {visible(line, one_line=True)}", file=sys.stderr)
        return EXIT_USAGE
    todo = [s for s in specs if (r := done.get(s.task.id)) is None or r.status not in FINAL]
    final = {id: r for id, r in done.items() if r.status in FINAL}
    try:
        interrupted = _Batch(args, results_path).run(todo, len(specs) - len(todo), final)
    except _Unavailable as exc:
        print(f"codecoder batch: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if interrupted is not None:
        return _SIGNAL_EXITS.get(interrupted, EXIT_SIGINT)
    passed = all(final.get(s.task.id) and final[s.task.id].status == "passed" for s in specs)
    return EXIT_OK if passed else EXIT_FAILED


def _default_results(tasks: Path) -> Path:
    return tasks.with_name(f"{tasks.stem}.results.jsonl")


class _Unavailable(Exception):
    """The runner asked for cannot run (Ray not installed, no cluster at ADDRESS)."""


class _Batch:
    """The driver: a runner, the results file, the progress line, the signal watcher."""

    def __init__(self, args: argparse.Namespace, results: Path) -> None:
        self.args = args
        self.results = results

    def run(self, todo: list[TaskSpec], skipped: int, final: dict[str, ResultLine]) -> int | None:
        """Run `todo`, putting each final result into `final`; the signal that
        interrupted the batch, else None."""
        from codecoder.batch.progress import Progress
        from codecoder.batch.results import FINAL, ResultsWriter
        from codecoder.batch.signals import SignalWatcher

        runner = self._runner()
        progress = Progress(len(todo), sys.stderr, skipped=skipped)
        writer = ResultsWriter(self.results)
        finished: set[str] = set()

        def started(spec: TaskSpec) -> None:
            progress.task_started()

        def ended(outcome: TaskOutcome) -> None:
            result = self._write(writer, outcome)
            finished.add(result.id)
            if result.status in FINAL:
                final[result.id] = result
            progress.task_finished(result)

        watcher = SignalWatcher(lambda signum: runner.cancel())
        try:
            runner.run(todo, started, ended)
        finally:
            watcher.close()
            runner.close()
            writer.close()
            progress.close()
        not_started = len(todo) - len(finished)
        sys.stderr.write(progress.summary(not_started=not_started if watcher.first else 0))
        return watcher.first

    def _runner(self) -> Runner:
        if self.args.ray is None:
            from codecoder.batch.launch import ZygoteLauncher
            from codecoder.batch.pool import LocalPool

            return LocalPool(self.args.parallel or os.cpu_count() or 1, ZygoteLauncher())
        try:
            from codecoder.batch.ray_runner import RayRunner, RayUnavailable
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise _Unavailable("--ray needs Ray: pip install 'codecoder[ray]'") from None
        try:
            return RayRunner.connect(
                self.args.ray,
                parallel=self.args.parallel,
                cpus_per_task=self.args.cpus_per_task or 1.0,
            )
        except RayUnavailable as exc:
            raise _Unavailable(str(exc)) from None

    @staticmethod
    def _write(writer: ResultsWriter, outcome: TaskOutcome) -> ResultLine:
        import msgspec

        result = outcome.result
        if outcome.session is not None:
            where = writer.export(result.id, outcome.session)
            result = msgspec.structs.replace(result, session_export=where)
        writer.write(result)
        return result
