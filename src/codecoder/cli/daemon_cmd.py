"""`codecoder daemon [--detach]` and `codecoder acp`: the two ways to serve ACP
(docs/acp.md), and `codecoder daemon status | stop`, which ask a running daemon. Both
serve their sessions with the same defaults (`-m`, `--script`, `--approval`); `acp`
defaults to `ask`, since an editor is a person who can answer.

An editor starts `codecoder acp` and waits for its answer to `initialize`, so a line that
starts with either command is parsed here, by their parsers alone (`parse`), and what a
session needs is imported at its first session (docs/benchmarks.md, "Daemon")."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from codecoder.approval import MODES
from codecoder.exitcodes import EXIT_USAGE
from codecoder.sandbox import MODES as SANDBOX_MODES

if TYPE_CHECKING:
    from codecoder.daemon.main import DaemonOptions


class _NotOurs(Exception):
    pass


class _QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _NotOurs(message)


def parse(argv: list[str]) -> argparse.Namespace | None:
    """A command line that starts with `daemon` or `acp`, read by those two parsers alone
    (the whole parser imports every command's module); None when it does not parse, and
    the whole parser then says why, with its suggestions."""
    parser = _QuietParser(prog="codecoder")
    add_parsers(parser.add_subparsers(dest="command", metavar="COMMAND"))
    try:
        return parser.parse_args(argv)
    except _NotOurs:
        return None


def add_parsers(subparsers: argparse._SubParsersAction[Any]) -> None:
    daemon = subparsers.add_parser(
        "daemon", help="serve sessions over a Unix socket; they outlive their clients"
    )
    _defaults(daemon)
    daemon.add_argument(
        "--detach", action="store_true", help="run in the background and print the socket path"
    )
    daemon.add_argument(
        "--answer-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="deny a question nobody is attached to answer after S seconds (default 300)",
    )
    daemon.set_defaults(func=run_daemon)
    daemon.add_argument(
        "action",
        nargs="?",
        metavar="status | stop",
        help="status: whether a daemon runs, its pid, socket and sessions (exit 1 when none "
        "does); stop: stop it as SIGTERM does (turns cancelled and committed) and wait",
    )
    daemon.add_argument("--json", action="store_true", help="status: print one JSON object")
    daemon.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="stop: give up (exit 1) if it has not stopped after S seconds (default 60)",
    )
    acp = subparsers.add_parser("acp", help="speak the Agent Client Protocol on stdin/stdout")
    _defaults(acp)
    acp.set_defaults(func=run_acp)


def _defaults(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--model", help="PROVIDER/MODEL for new sessions")
    parser.add_argument("--script", help="new sessions replay this codecoder-script/1 file")
    parser.add_argument("--approval", choices=MODES, default="ask", help="mode of new sessions")
    parser.add_argument(
        "--sandbox", choices=SANDBOX_MODES, help="sandbox of new sessions' commands"
    )


ACTIONS = ("status", "stop")


def run_daemon(options: argparse.Namespace) -> int:
    """Serve, or with an action ask the running daemon. The action is a plain optional
    word, not a subcommand: argparse would take the value of a misspelt option
    (`daemon --aproval ask`) for a subcommand and say "invalid choice: 'ask'" instead of
    suggesting `--approval`."""
    if options.action is None:
        if options.json:
            return _usage("--json goes with `codecoder daemon status`")
        from codecoder.daemon.main import run_daemon

        return run_daemon(_defaults_of(options), options.answer_timeout, detach=options.detach)
    if options.action not in ACTIONS:
        import difflib  # a misspelt action only: `daemon` and `acp` start lean

        close = difflib.get_close_matches(options.action, ACTIONS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return _usage(f"`codecoder daemon` takes status or stop, not {options.action!r}{hint}")
    if options.detach:
        return _usage(f"--detach does not go with `codecoder daemon {options.action}`")
    from codecoder.daemon.control import status, stop

    if options.action == "status":
        return status(as_json=options.json)
    if not options.timeout > 0:
        return _usage("--timeout must be above 0")
    return stop(timeout=options.timeout)


def _usage(message: str) -> int:
    print(f"codecoder: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_acp(options: argparse.Namespace) -> int:
    from codecoder.daemon.main import run_acp

    return run_acp(_defaults_of(options))


def _defaults_of(options: argparse.Namespace) -> DaemonOptions:
    from codecoder.daemon.main import DaemonOptions

    return DaemonOptions(
        model=options.model,
        script=options.script,
        approval=options.approval,
        sandbox=options.sandbox,
    )
