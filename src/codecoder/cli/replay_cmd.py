"""`codecoder replay SESSION`: run a recorded session again, offline, and say whether it
did the same thing (docs/replay.md). Exit 0 when identical, 1 on the first difference
(one line naming it), 2 when the session cannot be replayed."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from codecoder.approval import MODES
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from codecoder.app.replay import ReplayReport


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = subparsers.add_parser(
        "replay",
        help="run a recorded session again offline and compare",
        description="Replay a session from its record: no model, no person, no tool is "
        "asked; the history and the events must come out the same.",
    )
    replay.add_argument("session", help="session id or a prefix of at least 4 characters")
    replay.add_argument(
        "--live-tools",
        nargs="?",
        const="read-only",
        choices=MODES,
        metavar="MODE",
        help="run the tools again for real, those the folder's permissions allow in MODE "
        "without asking (default read-only), and report the first result that differs",
    )
    replay.add_argument("--json", action="store_true", help="the events as exec --json lines")
    replay.set_defaults(func=replay_cmd)


def replay_cmd(args: argparse.Namespace) -> int:
    from codecoder import paths
    from codecoder.app.replay import ReplayError, replay_session
    from codecoder.cli import jsonl
    from codecoder.kernel.events import AgentEvent
    from codecoder.sessions import SessionError, SessionStore

    if not paths.sessions_db().exists():
        print(f"codecoder replay: no session matches {args.session!r} (no sessions yet)",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    out = sys.stdout.buffer

    def write_line(turn: int, event: AgentEvent) -> None:
        out.write(jsonl.encode(jsonl.line_for(event, turn)))

    on_event = write_line if args.json else None
    try:
        with SessionStore() as store:
            session_id = store.resolve(args.session)
            report = replay_session(
                store, session_id, live_tools=args.live_tools, on_event=on_event
            )
    except (ReplayError, SessionError) as exc:
        print(f"codecoder replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        d = report.divergence
        divergence = jsonl.ReplayDivergence(d.call_id, d.tool, d.recorded, d.live) if d else None
        summary = report.summary()
        line = jsonl.ReplayLine(
            session_id, report.identical, summary, report.turns, report.messages, divergence,
            report.not_rerun,
        )  # fmt: skip
        out.write(jsonl.encode(line))
        out.flush()
    else:
        _print(report)
    return EXIT_OK if report.identical else EXIT_FAILED


def _print(report: ReplayReport) -> None:
    """The report, a line each: its lines name tools and quote results the model and the
    files chose, so each is shown on one line (`visible`)."""
    lines = [report.summary(), *(f"  also: {line}" for line in report.event_differences[1:])]
    if report.divergence is not None:
        d = report.divergence
        lines += [f"  recorded: {_excerpt(d.recorded)}", f"  today:    {_excerpt(d.live)}"]
    if report.not_rerun:
        lines.append(f"  not run again: {', '.join(report.not_rerun)}")
    for line in lines:
        print(visible(line, one_line=True))


def _excerpt(text: str, limit: int = 200) -> str:
    """The start of a result on one line, its runs of white space made one space."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
