"""`codecoder prompt [-C DIR] [--approval MODE]`: print the system prompt a turn there
would get in that mode (DESIGN.md §7), so users can see what AGENTS.md, CONTEXT.md,
skills and the approval mode contribute.

The prompt goes to stdout; what was left out (malformed front matter, unreadable files)
goes to stderr as `warning:` lines, so `codecoder prompt > file` captures only the prompt.
Both are for reading and hold the repository's words (AGENTS.md, skills, file names), so
both are shown through `visible`, to a terminal or a file alike: an escape sequence in
AGENTS.md reads as `^[`, which is how a person finds it there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codecoder.approval import MODES
from codecoder.exitcodes import EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "prompt", help="print the system prompt a turn in this folder would get"
    )
    parser.add_argument("-C", "--cwd", metavar="DIR", help="the workspace (default: here)")
    parser.add_argument(
        "--approval",
        choices=MODES,
        default="ask",
        help="the approval mode of the session (default: ask, the terminal client's)",
    )
    parser.set_defaults(func=run_prompt)


def run_prompt(options: argparse.Namespace) -> int:
    from codecoder.app.wiring import WiringError, preview_prompt

    workspace = Path(options.cwd) if options.cwd else Path.cwd()
    if not workspace.is_dir():
        print(f"codecoder prompt: not a folder: {workspace}", file=sys.stderr)
        return EXIT_USAGE
    try:
        text, warnings = preview_prompt(workspace.resolve(), options.approval)
    except WiringError as exc:
        print(f"codecoder prompt: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    for warning in warnings:
        print(f"warning: {visible(warning, one_line=True)}", file=sys.stderr)
    sys.stdout.write(visible(text) + "\n")
    return EXIT_OK
