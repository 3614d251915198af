"""Reading /proc in tests, independently of the code under test: is a process still
there, and which processes carry a command's marker."""

from __future__ import annotations

import os
from pathlib import Path

from codecoder.tools.process import MARKER_VAR


def stat_of(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, None when it is gone (reaped)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1])


def alive(pid: int) -> bool:
    """Running: present and not a zombie (a dead child waiting to be reaped)."""
    stat = stat_of(pid)
    return stat is not None and stat[0] != "Z"


def marked(marker: str) -> set[int]:
    """Processes whose environment carries the run_command marker `marker`."""
    needle = f"{MARKER_VAR}={marker}\0".encode()
    found: set[int] = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if needle in Path(f"/proc/{name}/environ").read_bytes():
                    found.add(int(name))
            except OSError:
                continue
    return found
