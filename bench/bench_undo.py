"""Checkpoint figures for docs/benchmarks.md (issue 18, item 5).

    .venv/bin/python bench/bench_undo.py [--files 10000] [--reps 15]

A repository of --files small files (100 folders, a .gitignore, a git repository), its
object store already holding a snapshot (the cold first one is measured on its own), and
the real pieces: WriteFile and RunCommand, checkpoints.record's wrapper, a real session
store. Each figure is the wall time a call takes with its checkpoint minus the same call
without one, the two alternated, median and p90 of --reps pairs:

- files: a turn's three write_file calls on three files (each: read before, write, read
  after, two blobs, the session store's row). Target: <= 50 ms.
- command: a run_command that rewrites three files: what the call takes longer (the
  snapshot before the command, and starting the thread that takes the one after), and
  apart, the snapshot after it with the diff and the row, which the turn does not wait
  for (the model reads the result meanwhile; the next call that may change a file waits
  for it).
- unchanged: a run_command that changes nothing, both snapshots counted (nothing kept:
  the store gains no object and no row, which is checked).
- cold: the first snapshot of the repository (every file hashed into the store), once.

Wall time, since the target is what a turn waits, and CPU time (ours and our children's,
git's) which a busy machine inflates far less; the machine's load is printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from codecoder.checkpoints.objects import MB, ObjectStore
from codecoder.checkpoints.record import CheckpointedTool, Checkpoints, CheckpointSink
from codecoder.config_schema import UndoTable
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import Tool, ToolContext
from codecoder.sessions import SessionStore
from codecoder.tools.files import WriteFile
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand


def make_repo(root: Path, files: int) -> None:
    per = max(1, files // 100)
    for d in range(100):
        folder = root / f"pkg{d:02d}"
        folder.mkdir(parents=True)
        for f in range(per):
            (folder / f"m{f:03d}.py").write_text(f"# {d}/{f}\n" + "value = 1\n" * 30)
    (root / ".gitignore").write_text("build/\n*.log\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def ctx(workspace: Path, n: int) -> ToolContext:
    return ToolContext(
        call_id=f"call_{n}", cancel=CancelToken(), workspace=workspace, emit=lambda e: None
    )


class Cost(msgspec.Struct):
    wall: float
    cpu: float
    """ms of CPU of this process and its children (git, the command's shell)."""

    def __sub__(self, other: Cost) -> Cost:
        return Cost(self.wall - other.wall, self.cpu - other.cpu)

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.wall + other.wall, self.cpu + other.cpu)


def _cpu() -> float:
    import resource

    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


def timed(run: Callable[[], object]) -> Cost:
    wall, cpu = time.perf_counter(), _cpu()
    run()
    return Cost((time.perf_counter() - wall) * 1000, _cpu() - cpu)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        os.environ["XDG_DATA_HOME"] = str(root / "data")
        workspace = root / "ws"
        make_repo(workspace, options.files)
        store = SessionStore(root / "sessions.sqlite3")
        session = store.create(workspace, "bench")
        objects = ObjectStore(workspace, max_file=UndoTable().max_file_mb * MB)  # as sessions
        turn = [0]

        def save(number: int, first: int | None, files: bytes | None) -> None:
            store.save_checkpoint(
                session, number, message_id=first, workspace=workspace,
                store=str(objects.dir), files=files,
            )  # fmt: skip

        kept = Checkpoints(objects, CheckpointSink(save), turn=lambda: turn[0])
        manager = ProcessManager()
        try:
            bench = Bench(options, workspace, objects, kept, manager, store, session, turn)
            bench.report()
        finally:
            manager.close()
            store.close()


class Bench(msgspec.Struct):
    options: argparse.Namespace
    workspace: Path
    objects: ObjectStore
    kept: Checkpoints
    manager: ProcessManager
    store: SessionStore
    session: str
    turn: list[int]
    counter: int = 0

    def files(self, tools: dict[str, Tool]) -> Cost:
        """Three write_file calls on three files of the repository."""
        self.counter += 1
        total = Cost(0.0, 0.0)
        for n, path in enumerate(TARGETS):
            args = {"path": path, "content": f"# rewritten {self.counter}\n"}
            call = ctx(self.workspace, n)
            total += timed(lambda a=args, c=call: tools["write_file"].run(a, c))
        return total

    def command(self, tools: dict[str, Tool], *, change: bool) -> Cost:
        self.counter += 1
        line = " && ".join(f"echo {self.counter} >> {p}" for p in TARGETS) if change else "true"
        call = ctx(self.workspace, 9)
        return timed(lambda: tools["run_command"].run({"command": line}, call))

    def report(self) -> None:
        objects, store = self.objects, self.store
        cold = timed(lambda: objects.tree_of(objects.index_now()))
        copies: list[Path] = []
        plain: dict[str, Tool] = {
            "write_file": WriteFile(),
            "run_command": RunCommand(self.manager),
        }
        wrapped: dict[str, Tool] = {n: CheckpointedTool(t, self.kept) for n, t in plain.items()}
        samples: dict[str, list[Cost]] = {k: [] for k in LABELS}
        for rep in range(self.options.reps):
            self.turn[0] = rep + 1  # a turn each: each keeps its own row
            samples["files"].append(self.files(wrapped) - self.files(plain))
            with_cp = self.command(wrapped, change=True)
            samples["after"].append(timed(self.kept.settle))
            samples["command"].append(with_cp - self.command(plain, change=True))
            samples["pre"].append(timed(lambda: copies.append(objects.index_now())))
            objects.tree_of(copies.pop())  # off the path, as the command's thread does
            rows = len(store.checkpoints(session_id=self.session))
            loose = sum(1 for _ in (objects.dir / "objects").rglob("*"))
            self.turn[0] = 10_000 + rep  # a turn that changes nothing
            unchanged = self.command(wrapped, change=False)
            unchanged += timed(self.kept.settle)
            samples["unchanged"].append(unchanged - self.command(plain, change=False))
            assert len(store.checkpoints(session_id=self.session)) == rows, "a row for no change"
            assert sum(1 for _ in (objects.dir / "objects").rglob("*")) == loose, "objects added"
        load = os.getloadavg()
        print(
            f"{self.options.files} files, {self.options.reps} pairs, load "
            f"{load[0]:.2f} {load[1]:.2f} on {os.cpu_count()} cores"
        )
        print(f"cold first snapshot: {cold.wall:.0f} ms wall, {cold.cpu:.0f} ms CPU")
        for key, label in LABELS.items():
            wall = [c.wall for c in samples[key]]
            cpu = [c.cpu for c in samples[key]]
            print(
                f"{label:<46} wall median {statistics.median(wall):6.1f} p90 "
                f"{pct(wall, 0.9):6.1f} ms | CPU median {statistics.median(cpu):6.1f} ms"
            )


TARGETS = ("pkg01/m001.py", "pkg42/m007.py", "pkg99/m050.py")
LABELS = {
    "files": "3 write_file calls: the turn waits",
    "command": "run_command rewriting 3 files: the turn waits",
    "pre": "  (the snapshot before it, alone)",
    "after": "  then, off the turn's path: snapshot after",
    "unchanged": "run_command changing nothing: both snapshots",
}


if __name__ == "__main__":
    main()
