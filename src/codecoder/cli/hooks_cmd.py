"""`codecoder hooks list | approve` (docs/hooks.md).

    codecoder hooks list [-C DIR]      the hooks a session there runs, and the project's
                                       that do not run (untrusted folder, not approved,
                                       changed since approved)
    codecoder hooks approve [-C DIR]   let the project's hooks run, exactly as they are now

Approving shows every project hook first and approves that set: one the repository adds
or changes later needs approving again (hooks/config.py says why).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codecoder.exitcodes import EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hooks = subparsers.add_parser(
        "hooks",
        help="hooks: list them, approve a project's",
        description="Your commands run at points of a session (docs/hooks.md).",
    )
    verbs = hooks.add_subparsers(dest="hooks_command", metavar="COMMAND", required=True)
    listing = verbs.add_parser("list", help="the hooks a session here runs, and those it does not")
    listing.add_argument("-C", "--cwd", default=".", help="the workspace (default: here)")
    listing.set_defaults(func=run_list)
    approve = verbs.add_parser("approve", help="let this project's hooks run, as they are now")
    approve.add_argument("-C", "--cwd", default=".", help="the workspace (default: here)")
    approve.set_defaults(func=run_approve)


def run_list(options: argparse.Namespace) -> int:
    from codecoder.config import ConfigError, user_config
    from codecoder.hooks.config import Approvals, hooks_of, project_hooks, unapproved, unconfined
    from codecoder.permissions.trust import is_trusted

    workspace = _workspace(options.cwd)
    if workspace is None:
        return EXIT_USAGE
    from codecoder import paths

    try:
        mine = hooks_of(user_config(), "user", str(paths.config_dir() / "config.toml"))
        theirs = project_hooks(workspace)
    except ConfigError as exc:
        print(f"codecoder hooks: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not mine and not theirs:
        print("no hooks configured ([[hooks.EVENT]] tables: docs/hooks.md)")
        return EXIT_OK
    for spec in mine:
        print(f"user     runs          {visible(spec.describe(), one_line=True)}")
    trusted = is_trusted(workspace)
    approved = Approvals.load()
    for spec in theirs:
        if not trusted:
            state = "not run (folder not trusted: codecoder trust)"
        elif not spec.sandbox:
            state = unconfined(spec).split(":", 1)[0].removeprefix("project hook ")
        elif approved.has(spec):
            state = "runs"
        else:
            state = unapproved(spec, approved).split(":", 1)[0].removeprefix("project hook ")
        print(f"project  {state:<13} {visible(spec.describe(), one_line=True)}")
    return EXIT_OK


def run_approve(options: argparse.Namespace) -> int:
    from codecoder.config import ConfigError
    from codecoder.hooks.config import Approvals, project_hooks
    from codecoder.permissions.trust import is_trusted

    workspace = _workspace(options.cwd)
    if workspace is None:
        return EXIT_USAGE
    try:
        theirs = project_hooks(workspace)
    except ConfigError as exc:
        print(f"codecoder hooks: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not theirs:
        print(f"{workspace} has no project hooks (.codecoder/config.toml)")
        return EXIT_OK
    print(
        f"approving the hooks of {workspace}; each runs as you, in the sandbox when the "
        "session's commands run in one:"
    )
    for spec in theirs:
        never = "" if spec.sandbox else "   never runs: sandbox = false is for your own config only"
        print(f"  {visible(spec.describe(), one_line=True)}   ({spec.source}){never}")
    Approvals.load().approve(str(workspace), theirs)
    if not is_trusted(workspace):
        print("they run once the folder is trusted: codecoder trust")
    return EXIT_OK


def _workspace(given: str) -> Path | None:
    folder = Path(given).expanduser()
    if not folder.is_dir():
        print(f"codecoder: not a folder: {folder}", file=sys.stderr)
        return None
    return folder.resolve()
