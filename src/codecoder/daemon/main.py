"""The daemon's own entry points: `codecoder daemon [--detach]` and `codecoder acp`,
called by the command line (cli/daemon_cmd.py parses the flags) with plain options, so
the CLI imports nothing of the daemon but these and the client."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NamedTuple

from codecoder.approval import ApprovalMode
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from codecoder.sandbox import SandboxMode

if TYPE_CHECKING:
    from pathlib import Path

    from codecoder.app.options import AgentOptions
    from codecoder.daemon.handler import Hub, UnloadPolicy

DETACH_WAIT = 15.0
"""Seconds `--detach` waits for the daemon's socket to answer."""


class DaemonOptions(NamedTuple):
    """The defaults of the sessions a daemon or `acp` starts."""

    model: str | None = None
    script: str | None = None
    approval: ApprovalMode = "ask"
    sandbox: SandboxMode | None = None
    """None: each session's `[sandbox] mode`, else by its approval mode."""


def _hub(options: DaemonOptions, answer_timeout: float = 300.0) -> Hub:
    from codecoder.daemon.handler import Hub

    def defaults() -> AgentOptions:  # made at the first session
        from codecoder.app.options import AgentOptions

        return AgentOptions(
            model=options.model,
            script=options.script,
            approval=options.approval,
            sandbox=options.sandbox,
        )

    return Hub(defaults, answer_timeout=answer_timeout, unload=_unload_policy)


def _unload_policy() -> UnloadPolicy:
    """`[daemon]` of the user's config, read at the first session (a ConfigError then
    fails that session/new, as a bad config does)."""
    from codecoder.config import user_config
    from codecoder.config_schema import DaemonTable, section
    from codecoder.daemon.handler import UnloadPolicy

    table = section(user_config(), "daemon", DaemonTable)
    return UnloadPolicy(idle=table.idle_unload, max_idle=table.max_idle)


def run_daemon(options: DaemonOptions, answer_timeout: float, *, detach: bool = False) -> int:
    from codecoder import paths
    from codecoder.daemon.client import running_daemon
    from codecoder.daemon.server import DaemonError, DaemonServer, log

    path = paths.daemon_socket()
    if detach:
        return _detach(options, answer_timeout, path)
    if not answer_timeout > 0:
        print("codecoder: --answer-timeout must be above 0", file=sys.stderr)
        return EXIT_USAGE
    server = DaemonServer(_hub(options, answer_timeout), path)
    try:
        server.start()
    except DaemonError as exc:
        print(f"codecoder: {exc}", file=sys.stderr)
        return EXIT_FAILED if running_daemon(path) else EXIT_USAGE
    log(f"listening on {path} (pid {os.getpid()})")
    server.serve_until_stopped()
    log("stopped")
    return EXIT_OK


def _detach(options: DaemonOptions, answer_timeout: float, path: Path) -> int:
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
    argv += ["--answer-timeout", str(answer_timeout)]
    if options.model:
        argv += ["--model", options.model]
    if options.script:
        argv += ["--script", os.path.abspath(options.script)]
    if options.sandbox:
        argv += ["--sandbox", options.sandbox]
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


def run_acp(options: DaemonOptions) -> int:
    from codecoder.daemon.stdio import serve_stdio

    return serve_stdio(_hub(options))
