"""`codecoder daemon [--detach]` and `codecoder acp`: the two ways to serve ACP
(docs/acp.md). Both build their sessions with the same defaults (`-m`, `--script`,
`--approval`); `acp` defaults to `ask`, since an editor is a person who can answer.

An editor starts `codecoder acp` and waits for its answer to `initialize`, so a line that
starts with either command is parsed here, by their parsers alone (`parse`), and what a
session needs is imported at its first session (docs/benchmarks.md, "Daemon")."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, NoReturn

from codecoder.approval import MODES
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


def run_daemon(options: argparse.Namespace) -> int:
    from codecoder.daemon.main import run_daemon

    return run_daemon(_defaults_of(options), options.answer_timeout, detach=options.detach)


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
