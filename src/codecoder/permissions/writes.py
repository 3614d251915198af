"""Whether a command line writes nothing: the sandbox's question before it confines one.

A line made only of commands on the built-in read-only list (`ls`, `cat x | grep y`,
`git diff`), with no redirection into a file (`2>/dev/null` is fine), needs nothing
writable but /tmp. The sandbox then runs it in `read-only` even where the session runs
`workspace-write` (sandbox/runtime.py), and a command whose workspace is mounted
read-only needs no checkpoint (checkpoints/record.py): the parser's reading decides only
how little the command gets, never how much, so a line it misreads fails with
"Read-only file system" instead of writing past the checkpoint.

Only the words count, not what they name on disk: which files a reading line reads is
the permission check's business, and a redirection is a write unless its target is the
literal `/dev/null` (a link named anything else counts as a file). So nothing here
resolves a path, and the answer does not change with the disk.
"""

from __future__ import annotations

import re
from pathlib import Path

from codecoder.permissions.readonly import read_only
from codecoder.permissions.shell import Redirect, SimpleCommand, parse_command

DISCARD = "/dev/null"
_ASKS_WRITABLE = re.compile(r"(?:^|[\s;&|(])-(?:w|writable)(?=[\s;&|)]|$)")
"""`test -w`, `[[ -w f ]]`, `find -writable`: on a read-only mount the answer is "no",
so a line that asks runs as it would have (any `-w` word does, `grep -w` too: a
checkpoint more, never a wrong answer)."""


def writes_nothing(command: str, cwd: Path) -> bool:
    """The Sandbox's `reads_only` (`cwd` is not needed: see the module doc)."""
    if _ASKS_WRITABLE.search(command):
        return False
    parsed = parse_command(command)
    if parsed.problems or not parsed.commands:
        return False
    return all(map(_reads, parsed.commands)) and not any(map(_writes, parsed.redirects))


def reads_repository(command: str, cwd: Path) -> bool:
    """The Sandbox's `reads_repository`: a line that writes nothing and runs git. git
    takes the names of programs (filters, diff drivers, a pager, gpg) from the
    repository's config, which an earlier command may have written, so such a line runs
    confined read-only even in a session whose commands run unconfined."""
    if not writes_nothing(command, cwd):
        return False
    words = (word.text for cmd in parse_command(command).commands for word in cmd.argv)
    return any(_names_git(word) for word in words)


def _names_git(word: str) -> bool:
    """Any word (not only the first: `command git`, `xargs git log`, `time git diff`)
    that names git or one of its programs; one more read-only line confined at worst."""
    name = word.rsplit("/", 1)[-1]
    return name == "git" or name.startswith("git-")


def _reads(cmd: SimpleCommand) -> bool:
    """On the read-only list as it is written (no `NAME=value` prefix, no guess)."""
    return not cmd.guessed and not cmd.assignments and read_only(cmd.argv) is not None


def _writes(redirect: Redirect) -> bool:
    return redirect.writes and (redirect.target.expands or redirect.target.text != DISCARD)
