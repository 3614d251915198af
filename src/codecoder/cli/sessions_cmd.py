"""`codecoder sessions`: list, show, export and fork stored sessions (DESIGN.md §7).

Every action opens the store at `paths.sessions_db()` for its own run. Reading commands
never create the file: with no store there are simply no sessions. An error is one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from codecoder import paths
from codecoder.kernel.messages import Message
from codecoder.sessions.errors import SessionError, UnknownSession
from codecoder.sessions.export import age, jsonl, markdown, transcript
from codecoder.sessions.records import SessionInfo
from codecoder.sessions.store import SessionStore
from codecoder.terminal_text import json_escaped, visible
from codecoder.wording import counted

Action = Callable[[SessionStore, argparse.Namespace], int]


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `sessions` and its actions; each sets `func(args) -> exit code`."""
    sessions = subparsers.add_parser(
        "sessions",
        help="list, show, export or fork stored sessions",
        description=(
            "List the sessions of this folder that got an answer, newest first (--all: every"
            " session of every folder, those that failed before a first answer or never got"
            " a prompt included)."
        ),
    )
    sessions.add_argument(
        "--all",
        action="store_true",
        help="list every session of every folder, failed and empty ones included",
    )
    sessions.add_argument(
        "-C", "--cwd", metavar="DIR", default=argparse.SUPPRESS, help="the folder to list"
    )
    sessions.set_defaults(func=list_cmd)
    actions = sessions.add_subparsers(dest="sessions_action", metavar="ACTION")

    show = actions.add_parser("show", help="print a session's transcript")
    show.add_argument("id", help="session id or a prefix of at least 4 characters")
    show.set_defaults(func=show_cmd)

    export = actions.add_parser("export", help="write a session's complete history to stdout")
    export.add_argument("id", help="session id or a prefix of at least 4 characters")
    export.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    export.add_argument(
        "--as-script",
        action="store_true",
        help="the model's side as a codecoder-script/1 file, for exec --script (a test)",
    )
    export.set_defaults(func=export_cmd)

    fork = actions.add_parser("fork", help="branch a session into a new one; prints its id")
    fork.add_argument("id", help="session id or a prefix of at least 4 characters")
    fork.add_argument(
        "--at", type=int, metavar="MESSAGE_ID", help="the last message to copy (default: all)"
    )
    fork.set_defaults(func=fork_cmd)


def list_cmd(args: argparse.Namespace) -> int:
    return _with_store(args, _list, missing_ok=True)


def show_cmd(args: argparse.Namespace) -> int:
    return _with_store(args, _show)


def export_cmd(args: argparse.Namespace) -> int:
    return _with_store(args, _export)


def fork_cmd(args: argparse.Namespace) -> int:
    return _with_store(args, _fork)


def _with_store(args: argparse.Namespace, action: Action, *, missing_ok: bool = False) -> int:
    path = paths.sessions_db()
    try:
        if not path.exists():
            if missing_ok:
                print("no sessions yet")
                return 0
            raise UnknownSession(f"no session matches {args.id!r} (no sessions yet)")
        with SessionStore(path) as store:
            return action(store, args)
    except BrokenPipeError:
        # The reader left (`… | head`): not an error; keep the exit-time flush quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (SessionError, sqlite3.Error, OSError) as exc:
        print(f"codecoder sessions: {exc}", file=sys.stderr)
        return 2


def _list(store: SessionStore, args: argparse.Namespace) -> int:
    """This folder's sessions that got an answer (and the daemon's live ones), or with
    `--all` every session of every folder: one that failed before a first answer or never
    got a prompt is nothing to resume or read, so the default listing leaves it out and
    says how many it left out, and `--all` is where to find them."""
    cwd = Path(getattr(args, "cwd", None) or os.getcwd())
    live = _live_sessions()
    if args.all:
        found, hidden = store.list_sessions(None), 0
    else:
        found = store.list_sessions(cwd, answered_only=True, keep=live)
        hidden = len(store.list_sessions(cwd)) - len(found)
    left_out = f"{counted(hidden, 'session')} without an answer not shown (--all lists them)"
    if not found:
        print("no sessions yet" if args.all else f"no sessions in {cwd.resolve()}")
        if hidden:
            print(left_out)
        return 0
    for line in _table(found, show_folder=args.all, live=live):
        print(line)
    if hidden:
        print(left_out)
    return 0


def _live_sessions() -> dict[str, str]:
    """The running daemon's live sessions, as a note per id ("live", "live, running,
    2 clients"); empty when no daemon runs."""
    from codecoder.daemon.client import DaemonClient, DaemonUnavailable, running_daemon

    if running_daemon() is None:
        return {}
    try:
        client = DaemonClient(timeout=2.0)
    except DaemonUnavailable:
        return {}
    try:
        client.initialize()
        sessions = client.call("_codecoder/sessions/list", {}, timeout=5.0)["sessions"]
    except Exception:  # a daemon that does not answer: list the store alone
        return {}
    finally:
        client.close()
    notes: dict[str, str] = {}
    for live in sessions:
        parts = ["live"]
        if live.get("running"):
            parts.append("running")
        if live.get("clients"):
            parts.append(counted(int(live["clients"]), "client"))
        notes[str(live.get("sessionId"))] = ", ".join(parts)
    return notes


def _table(
    sessions: list[SessionInfo], *, show_folder: bool, live: dict[str, str] | None = None
) -> list[str]:
    now = time.time()
    notes = live or {}
    rows = [
        tuple(
            visible(cell, one_line=True)  # a title is the user's first words, a folder any name
            for cell in (
                s.id[:8],
                s.title or "(untitled)",
                s.model,
                notes.get(s.id) or age(now - s.updated_at),
                _home(s.cwd),
            )
        )
        for s in sessions
    ]
    model_w = max(5, *(len(row[2]) for row in rows))
    age_w = max(3, *(len(row[3]) for row in rows))
    room = shutil.get_terminal_size((100, 24)).columns - (8 + 2) - (model_w + 2) - (age_w + 2)
    title_w = max(20, min(room, max(cells(row[1]) for row in rows)))
    lines = []
    for row in [("ID", "TITLE", "MODEL", "AGE" if not notes else "AGE/LIVE", "FOLDER"), *rows]:
        title = fit(row[1], title_w)
        line = f"{row[0]:<8}  {title}  {row[2]:<{model_w}}  {row[3]:<{age_w}}"
        lines.append((line + "  " + row[4]) if show_folder else line.rstrip())
    return lines


def cells(text: str) -> int:
    """Columns `text` takes in a terminal: a wide East Asian character takes two, a
    combining mark none. (`str.ljust` counts characters, and a Chinese or Japanese
    title pushed every column after it out of line.) The standard library's table, not
    wcwidth's: `sessions` is a plain command and starts without the client's imports."""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def fit(text: str, width: int) -> str:
    """`text` cut (with …) and padded to exactly `width` columns (the session picker
    of the client aligns its rows with it too)."""
    if cells(text) > width:
        out, used = [], 0
        for char in text:
            used += cells(char)
            if used > width - 1:
                break
            out.append(char)
        text = "".join(out) + "…"
    return text + " " * (width - cells(text))


def _home(folder: str) -> str:
    home = str(Path.home())
    return "~" + folder[len(home) :] if folder == home or folder.startswith(home + "/") else folder


def _show(store: SessionStore, args: argparse.Namespace) -> int:
    session_id = store.resolve(args.id)
    sys.stdout.write(visible(transcript(store.get(session_id), store.load_messages(session_id))))
    return 0


def _export(store: SessionStore, args: argparse.Namespace) -> int:
    """The session as data (JSONL, a script) or for reading (Markdown), on stdout either
    way, which is a terminal as often as a file. The JSON is escaped as `exec --json`'s
    is (`json_escaped`): every decoded value is exactly what was stored. The Markdown is
    always `visible`, redirected or not: it is for reading, and a file is read later with
    `cat` or `less` in a terminal, or in a viewer that reorders text at a bidi override
    just the same; the exact text is the JSONL's. One rule whatever stdout is, so what a
    person sees on the screen is what `> file.md` holds."""
    session_id = store.resolve(args.id)
    messages = store.load_messages(session_id)
    if args.as_script:
        return _export_script(store, session_id, messages)
    if args.format == "markdown":
        sys.stdout.write(visible(markdown(store.get(session_id), messages)))
        return 0
    sys.stdout.flush()
    sys.stdout.buffer.writelines(map(json_escaped, jsonl(messages)))
    sys.stdout.buffer.flush()
    return 0


def _export_script(store: SessionStore, session_id: str, messages: list[Message]) -> int:
    import json

    from codecoder.app.script_export import script_from_record
    from codecoder.kernel.journal import decode_entries

    rows = store.load_records(session_id)
    if not rows:
        raise SessionError(f"session {session_id[:8]} has no record to make a script of")
    entries = [entry for row in rows for entry in decode_entries(row)]
    script = script_from_record(entries, {m.id: m for m in messages})
    sys.stdout.flush()
    sys.stdout.buffer.write(json_escaped(json.dumps(script, indent=1, ensure_ascii=False).encode()))
    sys.stdout.buffer.write(b"\n")
    return 0


def _fork(store: SessionStore, args: argparse.Namespace) -> int:
    print(store.fork(store.resolve(args.id), args.at))
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m codecoder.cli.sessions_cmd sessions …`, the same commands on their own."""
    parser = argparse.ArgumentParser(prog="codecoder")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
