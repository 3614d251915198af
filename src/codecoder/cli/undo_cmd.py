"""`codecoder undo [-C DIR] [--session ID] [--turn N] [--redo] [--with-history] [--dry-run]
[--force] [--json]` (docs/undo.md).

Puts the files a turn changed back as they were before it (checkpoints/restore.py), and
prints the diff of what it restored. By default the workspace's latest session that has
something to undo, and its last turn that changed files; `--redo` puts back what the
last undo took away. Exit codes: 0 restored, 1 refused (a file changed since: each is
named) or nothing to undo, 2 usage (no such folder, session or turn).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    undo = subparsers.add_parser(
        "undo",
        help="put back the files a turn changed (the last one by default)",
        description="Restore the files a turn changed to what they were before it, and "
        "show the diff of what is restored (docs/undo.md).",
    )
    undo.add_argument("-C", "--cwd", default=".", help="the workspace (default: here)")
    undo.add_argument(
        "--session",
        metavar="ID",
        help="the session (its id, or the start of it); default: this folder's latest "
        "session that has something to undo (or redo)",
    )
    undo.add_argument("--turn", type=int, metavar="N", help="default: the last that changed files")
    undo.add_argument("--redo", action="store_true", help="put back what the last undo took away")
    undo.add_argument(
        "--with-history",
        action="store_true",
        help="rewind the conversation too: a fork of the session before that turn",
    )
    undo.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    undo.add_argument("--force", action="store_true", help="overwrite files changed since the turn")
    undo.add_argument("--json", action="store_true", help="the report as one JSON line")
    undo.set_defaults(func=run_undo)


def run_undo(options: argparse.Namespace) -> int:
    from codecoder.checkpoints.restore import UndoError, apply, pick
    from codecoder.sessions import SessionError, SessionStore

    workspace = Path(options.cwd).expanduser()
    if not workspace.is_dir():
        print(f"codecoder undo: no such folder: {workspace}", file=sys.stderr)
        return EXIT_USAGE
    workspace = workspace.resolve()
    direction = "redo" if options.redo else "undo"
    if options.redo and options.with_history:
        print("codecoder undo: --with-history rewinds with an undo, not a redo", file=sys.stderr)
        return EXIT_USAGE
    try:
        with SessionStore() as store:
            session = store.resolve(options.session) if options.session else None
            try:
                row = pick(
                    store, workspace, session_id=session, turn=options.turn, direction=direction
                )
            except UndoError as exc:
                print(f"codecoder undo: {visible(str(exc))}", file=sys.stderr)
                return EXIT_USAGE if options.turn is not None else EXIT_FAILED
            report = apply(
                store,
                row,
                direction,
                dry_run=options.dry_run,
                force=options.force,
                with_history=options.with_history,
            )
    except (SessionError, OSError) as exc:
        print(f"codecoder undo: {visible(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    if options.json:
        from codecoder.cli import jsonl

        sys.stdout.write(jsonl.encode(jsonl.undo_line(report)).decode())
        return EXIT_OK if report.done else EXIT_FAILED
    return _print(report)


def _print(report: object) -> int:
    """The diff on stdout, what was done on stderr. The model wrote the files and named
    them, so the diff goes through `visible` and each name is shown on one line (a
    newline in a name would forge a line of the report)."""
    from codecoder.checkpoints.restore import UndoReport, refusal

    assert isinstance(report, UndoReport)
    what = f"turn {report.turn} of session {report.session_id[:8]}"
    if report.conflicts:
        headline, hint = refusal((c.kind for c in report.conflicts), report.direction)
        print(f"codecoder undo: {headline}; nothing was restored ({what}):", file=sys.stderr)
        for conflict in report.conflicts:
            print(
                "  " + visible(f"{conflict.path}: {conflict.why}", one_line=True), file=sys.stderr
            )
        if hint is not None:
            print(f"  ({hint})", file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.write(visible(report.diff))
    verb = {"undo": "undid", "redo": "redid"}[report.direction]
    if report.dry_run:
        verb = f"would {report.direction}"
    counts = ", ".join(f"{visible(f.path, one_line=True)} ({f.action})" for f in report.files)
    print(f"{verb} {what}: {counts or 'no file'}", file=sys.stderr)
    for lost in report.not_kept:
        print(
            "  not restored: " + visible(f"{lost.path}: {lost.why}", one_line=True), file=sys.stderr
        )
    if report.fork is not None:
        print(
            f"the conversation goes on in session {report.fork[:8]}, which ends before that "
            f"turn (codecoder resume {report.fork[:8]})",
            file=sys.stderr,
        )
    elif report.direction == "undo" and not report.dry_run:
        print("codecoder undo --redo puts it back", file=sys.stderr)
    return EXIT_OK
