"""`codecoder daemon [--detach]` and `codecoder acp`: the two ways to serve ACP
(docs/acp.md). Both build their sessions with the same defaults (`-m`, `--script`,
`--approval`); `acp` defaults to `ask`, since an editor is a person who can answer."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from codecoder.cli.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from codecoder.permissions.modes import MODES

DETACH_WAIT = 15.0
"""Seconds `--detach` waits for the daemon's socket to answer."""


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _hub(options: argparse.Namespace, answer_timeout: float = 300.0) -> object:
    from codecoder.app.options import AgentOptions
    from codecoder.daemon.handler import Hub

    defaults = AgentOptions(model=options.model, script=options.script, approval=options.approval)
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
    server = DaemonServer(_hub(options, options.answer_timeout), path)  # type: ignore[arg-type]
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

    return serve_stdio(_hub(options))  # type: ignore[arg-type]
