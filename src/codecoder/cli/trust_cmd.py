"""`codecoder trust [DIR]` and `codecoder untrust [DIR]`: whether a folder's `.codecoder/`
settings apply (docs/permissions.md, "Trust"). The list lives in
`$XDG_CONFIG_HOME/codecoder/trusted.toml`, by real path, one folder at a time. `trust`
also approves the folder's allow rules as they are then (permissions/trust.py): run again,
it approves a set that changed since."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codecoder.exitcodes import EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    trust = subparsers.add_parser(
        "trust",
        help="apply this folder's .codecoder/ settings (project rules)",
        description="Trust a folder: its .codecoder/config.toml and config.local.toml apply "
        "from the next session on, their allow rules as they are now (run it again to "
        "approve a changed set). Subfolders are not included.",
    )
    trust.add_argument("dir", nargs="?", default=".", metavar="DIR", help="default: here")
    trust.set_defaults(func=run_trust)
    untrust = subparsers.add_parser(
        "untrust", help="stop applying this folder's .codecoder/ settings"
    )
    untrust.add_argument("dir", nargs="?", default=".", metavar="DIR", help="default: here")
    untrust.set_defaults(func=run_untrust)


def run_trust(options: argparse.Namespace) -> int:
    from codecoder.config import ConfigError, read_toml
    from codecoder.permissions.rules import ACTIONS, parse_table
    from codecoder.permissions.trust import PROJECT_FILES, approve_project, trust

    folder = _folder(options.dir)
    if folder is None:
        return EXIT_USAGE
    try:
        changed = trust(folder)
    except ConfigError as exc:
        print(f"codecoder trust: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'trusted' if changed else 'already trusted'}: {folder}")
    broken = False
    for name in PROJECT_FILES:
        path = folder / ".codecoder" / name
        if not path.exists():
            continue
        try:
            rules = parse_table(read_toml(path).get("permissions"), str(path))
        except ConfigError as exc:  # trusted all the same: the user can fix the file now
            print(f"warning: {exc}", file=sys.stderr)
            broken = True
            continue
        found = {action: getattr(rules, action) for action in ACTIONS}
        counts = [f"{len(found[a])} {a}" for a in ACTIONS if found[a]]
        print(f"  applies .codecoder/{name}" + (f" (rules: {', '.join(counts)})" if counts else ""))
    if broken:
        print("  no allow rules approved: fix the file and run `codecoder trust` again")
        return EXIT_OK
    approved = approve_project(folder)
    if approved:
        print("  allow rules approved as they are now (a change needs `codecoder trust` again):")
        for text in approved:  # the project's words, shown as they are before they apply
            print(f"    {visible(text, one_line=True)}")
    return EXIT_OK


def run_untrust(options: argparse.Namespace) -> int:
    from codecoder.config import ConfigError
    from codecoder.permissions.trust import untrust

    folder = _folder(options.dir)
    if folder is None:
        return EXIT_USAGE
    try:
        changed = untrust(folder)
    except ConfigError as exc:
        print(f"codecoder untrust: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'no longer trusted' if changed else 'was not trusted'}: {folder}")
    return EXIT_OK


def _folder(given: str) -> Path | None:
    folder = Path(given).expanduser()
    if not folder.is_dir():
        print(f"codecoder: not a folder: {folder}", file=sys.stderr)
        return None
    return folder.resolve()
