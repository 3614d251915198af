"""What a session has read: each file's stamp when read_file last showed it.

write_file replaces a whole file, so over a file the model has not seen, or one that
changed after it looked (a formatter, the user, a command), it would drop text nobody
read. The file tools of one session share a ReadLedger; write_file refuses in those two
cases, and edit_file says when the file changed since the read. A stamp is the file's
(mtime_ns, size, inode): a change that keeps all three (a rewrite of the same size within
one mtime tick of a coarse file system) goes unseen.

The ledger lives as long as the tools, so a resumed session starts having read nothing
and must read a file again before replacing it. Sub-agents get ledgers of their own:
what they read the parent model never saw. Tools run on their loop's thread only, so
the ledger needs no lock; it keeps the MAX_FILES most recent files.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from enum import Enum
from pathlib import Path
from typing import NamedTuple

MAX_FILES = 4096
"""Files remembered; the least recently read beyond this must be read again."""


class Stamp(NamedTuple):
    mtime_ns: int
    size: int
    inode: int

    @classmethod
    def of(cls, info: os.stat_result) -> Stamp:
        return cls(info.st_mtime_ns, info.st_size, info.st_ino)


class Seen(Enum):
    UNREAD = "unread"
    CHANGED = "changed"
    CURRENT = "current"


class ReadLedger:
    """Real paths to the stamp each had when the session last read or wrote it."""

    def __init__(self, max_files: int = MAX_FILES) -> None:
        self._stamps: OrderedDict[Path, Stamp] = OrderedDict()
        self._max = max_files

    def read(self, path: Path, info: os.stat_result) -> None:
        """The session has seen all it needs of `path` as `info` describes it: it read
        it, or wrote the whole of it."""
        self._stamps[path] = Stamp.of(info)
        self._stamps.move_to_end(path)
        while len(self._stamps) > self._max:
            self._stamps.popitem(last=False)

    def seen(self, path: Path, info: os.stat_result) -> Seen:
        stamp = self._stamps.get(path)
        if stamp is None:
            return Seen.UNREAD
        return Seen.CURRENT if stamp == Stamp.of(info) else Seen.CHANGED
