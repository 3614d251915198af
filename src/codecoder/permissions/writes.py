"""Whether a command line writes nothing: the sandbox's question before it confines one.

A line made only of commands on the built-in read-only list (`ls`, `cat x | grep y`,
`git diff`), with no redirection into a file (`2>/dev/null` is fine), needs nothing
writable but /tmp. The sandbox then runs it in `read-only` even where the session runs
`workspace-write` (sandbox/runtime.py), and a command whose workspace is mounted
read-only needs no checkpoint (checkpoints/record.py): the parser's reading decides only
how little the command gets, never how much, so a line it misreads fails with
"Read-only file system" instead of writing past the checkpoint.
"""

from __future__ import annotations

import re
from pathlib import Path

from codecoder.permissions.calls import CommandPart, FilePart, Scope, command_parts

DISCARD = Path("/dev/null")
_ASKS_WRITABLE = re.compile(r"(?:^|[\s;&|(])-(?:w|writable)(?=[\s;&|)]|$)")
"""`test -w`, `[[ -w f ]]`, `find -writable`: on a read-only mount the answer is "no",
so a line that asks runs as it would have (any `-w` word does, `grep -w` too: a
checkpoint more, never a wrong answer)."""


class WritesNothing:
    """Callable as `(command, cwd) -> bool`: the Sandbox's `reads_only`."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def __call__(self, command: str, cwd: Path) -> bool:
        if _ASKS_WRITABLE.search(command):
            return False
        parts = command_parts({"command": command, "cwd": str(cwd)}, self.scope)
        return bool(parts) and all(_reads(part) for part in parts)


def _reads(part: object) -> bool:
    if isinstance(part, CommandPart):
        return part.read_only
    if isinstance(part, FilePart):
        return not part.writes or part.target.real == DISCARD
    return False  # a hazard, or a part a command line should not have
