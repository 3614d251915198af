"""`codecoder daemon [--detach]` and `codecoder acp`: the two ways to serve ACP
(docs/acp.md). Both build their sessions with the same defaults (`-m`, `--script`,
`--approval`); `acp` defaults to `ask`, since an editor is a person who can answer.

An editor starts `codecoder acp` and waits for its answer to `initialize`, so a line that
starts with either command is parsed here, by their parsers alone (`parse`), and what a
session needs is imported at its first session (docs/benchmarks.md, "Daemon")."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from codecoder.approval import MODES
from codecoder.cli.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from pathlib import Path

    from codecoder.app.options import AgentOptions
    from codecoder.daemon.handler import Hub

DETACH_WAIT = 15.0
"""Seconds `--detach` waits for the daemon's socket to answer."""


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


def _hub(options: argparse.Namespace, answer_timeout: float = 300.0) -> Hub:
    from codecoder.daemon.handler import Hub

    def defaults() -> AgentOptions:  # made at the first session
        from codecoder.app.options import AgentOptions

        return AgentOptions(model=options.model, script=options.script, approval=options.approval)

    return Hub(defaults, answer_timeout=answer_timeout)


def run_daemon(options: argparse.Namespace) -> int:
    from codecoder import paths
    from codecoder.daemon.client import running_daemon
    from codecoder.daemon.server import DaemonError, DaemonServer, log

    path = paths.daemon_socket()
    if options.detach:
        return _detach(options, path)
    if not options.answer_timeout > 0:
        print("codecoder: --answer-timeout must be above 0", file=sys.stderr)
        return EXIT_USAGE
    server = DaemonServer(_hub(options, options.answer_timeout), path)
    try:
        server.start()
    except DaemonError as exc:
        print(f"codecoder: {exc}", file=sys.stderr)
        return EXIT_FAILED if running_daemon(path) else EXIT_USAGE
    log(f"listening on {path} (pid {os.getpid()})")
    server.serve_until_stopped()
    log("stopped")
    return EXIT_OK


def _detach(options: argparse.Namespace, path: Path) -> int:
    """Start the daemon as a process of its own session, log to a file, wait until its
    socket answers, and print the socket's path."""
    import subprocess
    import time

    from codecoder import paths
    from codecoder.daemon.client import running_daemon

    if running_daemon(path):
        print(path)
        return EXIT_OK
    argv = [sys.executable, "-m", "codecoder", "daemon", "--approval", options.approval]
    argv += ["--answer-timeout", str(options.answer_timeout)]
    if options.model:
        argv += ["--model", options.model]
    if options.script:
        argv += ["--script", os.path.abspath(options.script)]
    folder = paths.runtime_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = folder / "daemon.log"
    with open(log_path, "ab") as log_file, open(os.devnull, "rb") as devnull:
        child = subprocess.Popen(
            argv, stdin=devnull, stdout=log_file, stderr=log_file, start_new_session=True
        )
    deadline = time.monotonic() + DETACH_WAIT
    while time.monotonic() < deadline:
        if running_daemon(path):
            print(path)
            return EXIT_OK
        if child.poll() is not None:
            break
        time.sleep(0.02)
    print(f"codecoder: the daemon did not start; see {log_path}", file=sys.stderr)
    return EXIT_FAILED


def run_acp(options: argparse.Namespace) -> int:
    from codecoder.daemon.stdio import serve_stdio

    return serve_stdio(_hub(options))
