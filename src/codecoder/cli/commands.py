"""The command line's parser and subcommand entry points (imported once a command runs,
never for `--version`)."""

from __future__ import annotations

import argparse
from typing import Any

from codecoder.cli.main import APPROVAL_MODES


def build_parser(first: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `first` (the first argv word) = "exec", only what `exec`
    parses, because registering the other commands imports their modules."""
    from codecoder import __version__

    parser = argparse.ArgumentParser(
        prog="codecoder",
        description="A coding agent for the terminal. Without a command: an interactive "
        "session in this folder.",
    )
    parser.add_argument("--version", "-V", action="version", version=f"codecoder {__version__}")
    _agent_options(parser, approval="ask")
    _session_options(parser)
    parser.set_defaults(func=_interactive, task=None, json=False, stdin_replies=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("exec", help="run one task headless and print the answer")
    run.add_argument("task", help="the task, or - to read it from standard input")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    _agent_options(run, approval="never-ask")
    _session_options(run)
    run.add_argument(
        "--stdin-replies",
        action="store_true",
        help="with --json: read answers to questions as JSON lines on stdin",
    )
    run.set_defaults(func=_exec)
    if first == "exec":
        return parser

    resume = sub.add_parser("resume", help="continue a session interactively")
    resume.add_argument("resume", nargs="?", metavar="ID", help="default: this folder's last")
    _agent_options(resume, approval="ask")
    resume.set_defaults(func=_interactive, continue_=False, task=None, json=False)

    demo = sub.add_parser("demo", help="replay a bundled session on an example project")
    demo.add_argument("--speed", type=float, default=1.0, help="replay speed factor")
    demo.add_argument("--keep", action="store_true", help="keep the example project copy")
    demo.set_defaults(func=_demo)

    from codecoder.cli import prompt_cmd, provider_commands, sessions_cmd, trust_cmd

    for module in (provider_commands, sessions_cmd, prompt_cmd, trust_cmd):
        module.add_parsers(sub)
    return parser


def _agent_options(parser: Any, *, approval: str) -> None:
    parser.add_argument("-m", "--model", help="PROVIDER/MODEL, e.g. openai/gpt-5")
    parser.add_argument("--script", help="replay a codecoder-script/1 file (offline)")
    parser.add_argument("-C", "--cwd", help="the workspace (default: the current folder)")
    parser.add_argument("--approval", choices=APPROVAL_MODES, default=approval)
    parser.add_argument("--max-rounds", type=int, default=100, metavar="N")
    parser.add_argument("--trace", metavar="FILE", help="write every command and event as JSONL")


def _session_options(parser: Any) -> None:
    session = parser.add_mutually_exclusive_group()
    session.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the last session of this workspace",
    )
    session.add_argument("--resume", metavar="ID", help="continue the session ID")


def _interactive(options: Any) -> int:
    from codecoder.cli.repl import run_repl

    if getattr(options, "command", None) == "resume" and options.resume is None:
        options.continue_ = True
    return run_repl(options)


def _exec(options: object) -> int:
    from codecoder.cli.headless import run_exec

    return run_exec(options)


def _demo(options: object) -> int:
    from codecoder.cli.demo import run_demo

    return run_demo(options)
