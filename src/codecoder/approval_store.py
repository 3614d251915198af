"""The files that pin what a trusted folder may run or grant once the user approved it:
its hooks (hooks/config.py), MCP servers (mcp/config.py) and allow rules
(permissions/trust.py). Not the approval modes of a run: approval.py.

Each is a JSON file under `$XDG_DATA_HOME/codecoder/`, `{"entries": [...]}`, one entry
per thing approved holding the digest of what was approved. One format, one reader and
one writer for the three, so that what makes them safe is said once: a file that cannot
be read approves nothing (a broken file never grants), and a write replaces the file in
one step (a crash mid-write never leaves half a file). Each store keeps what is its own:
what an entry records and is a digest of, what the file is called, and when an entry
replaces another.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, Self, TypeVar

import msgspec

Entry = TypeVar("Entry", bound=msgspec.Struct)


class Store(msgspec.Struct, Generic[Entry]):
    """One approvals file: a subclass gives the entry type and `file`."""

    entries: list[Entry] = []
    if TYPE_CHECKING:  # msgspec evaluates annotations; `staticmethod[...]` fails at run time
        file: ClassVar[staticmethod[[], Path]]
        """Where the store is kept (a subclass sets `file = staticmethod(approvals_file)`)."""

    @classmethod
    def load(cls) -> Self:
        """The approvals; none for a missing file, and none for one that cannot be read or
        decoded (safe: nothing is approved, and the next approval rewrites it)."""
        try:
            return msgspec.json.decode(cls.file().read_bytes(), type=cls)
        except (OSError, msgspec.DecodeError):
            return cls()

    def save(self) -> None:
        """Write the file atomically, indented for a person reading it."""
        from codecoder.permissions.tomlfile import atomic_write  # the permissions package is heavy

        atomic_write(self.file(), msgspec.json.format(msgspec.json.encode(self)).decode())


def digest(what: object) -> str:
    """The digest an entry holds: SHA-256 of `what` as `json.dumps` writes it by default
    (spaces, ASCII escapes), the bytes the approvals already written were made of."""
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()
