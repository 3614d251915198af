"""Reading /proc in tests, independently of the code under test: is a process still
there, and which processes carry a command's marker.

A process can vanish at any point while we look: after os.listdir("/proc") named it
(its files are missing), between opening one of its files and reading it (ESRCH, which
Python raises as ProcessLookupError), and once it is a zombie its environ and cmdline
read empty. Every reader here treats each of these as "gone" and never raises, so that a
test asserting a process died cannot fail because it died while being looked at (a
copy of the stat reader in the MCP tests did, about one run in fifteen)."""

from __future__ import annotations

import os
import select
import signal
from contextlib import suppress
from pathlib import Path

from codecoder.tools.process import MARKER_VAR


def pids() -> list[int]:
    """Every process /proc lists now; any of them may be gone by the time it is read."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def read(pid: int, name: str) -> bytes:
    """/proc/PID/NAME (cmdline, environ, ...); empty when the process is gone."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return b""


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp, session,
    ...), None when the process is gone. The name sits in parentheses and may itself hold
    spaces and ")", hence the last one; a line without it or cut short reads as gone."""
    raw = read(pid, "stat")
    close = raw.rfind(b")")
    fields = raw[close + 2 :].decode(errors="replace").split()
    if close < 0 or len(fields) < 4 or not all(f.lstrip("-").isdigit() for f in fields[1:4]):
        return None
    return fields


def stat_of(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, None when it is gone (reaped)."""
    fields = stat_fields(pid)
    return None if fields is None else (fields[0], int(fields[1]))


def alive(pid: int) -> bool:
    """Running or stopped: present and not a zombie (a dead child waiting to be reaped,
    which counts as dead: what a test of killing wants to know is that it ran no more)."""
    stat = stat_of(pid)
    return stat is not None and stat[0] != "Z"


def children_of(ppid: int) -> list[int]:
    """The processes whose parent is `ppid`, running or zombie."""
    return [pid for pid in pids() if (stat := stat_of(pid)) is not None and stat[1] == ppid]


def environ_value(pid: int, name: str) -> str | None:
    """The value of `name` in the process's environment; None when unset or gone."""
    prefix = f"{name}=".encode()
    for entry in read(pid, "environ").split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def marked(marker: str) -> set[int]:
    """Processes whose environment carries the run_command marker `marker`."""
    needle = f"{MARKER_VAR}={marker}\0".encode()
    return {pid for pid in pids() if needle in read(pid, "environ")}


def wait_exit(pid: int, timeout: float = 5.0) -> bool:
    """Block (on a pidfd, no sleep-loop) until `pid` has exited: True once it is a zombie
    or gone, also when it was reaped before we could open it; False at the timeout."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def kill(pid: int) -> None:
    """SIGKILL `pid` unless it is gone already: a process found by a scan may end, and be
    reaped, before the signal is sent, which is what a cleanup wanted anyway."""
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
