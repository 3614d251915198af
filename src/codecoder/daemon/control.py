"""`codecoder daemon status` and `codecoder daemon stop`: a running daemon, asked over its
socket (docs/acp.md, `_codecoder/daemon/status` and `_codecoder/shutdown`).

The daemon is asked rather than inspected from outside, because only it knows its
sessions, which of them run a turn, and who is attached. Its lock file is the fallback:
a daemon whose socket does not answer (stuck, or its socket file removed) still holds
the lock, with its pid in it, so `status` can say so and `stop` can send it SIGTERM,
which stops it the same way `_codecoder/shutdown` does. Stopping is waited for until the
daemon has let go of the lock (its turns cancelled and committed, its socket removed, the
last thing it does) and its process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from codecoder import paths
from codecoder.daemon.client import DaemonClient, DaemonUnavailable
from codecoder.daemon.rpc import METHOD_NOT_FOUND, PROTOCOL_VERSION, RpcError
from codecoder.daemon.server import lock_holder, lock_path
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK

ASK_TIMEOUT = 5.0
"""Seconds a running daemon has to answer `status` (it answers on its reader thread,
without waiting for any turn)."""
STOP_TIMEOUT = 60.0
"""Seconds `stop` waits by default: the daemon gives each session up to 10 s to cancel
its turn and commit its state."""


def status(*, as_json: bool = False, socket_path: Path | None = None) -> int:
    """Print whether a daemon runs and what it serves: 0 when one answers, 1 when none
    runs (or one holds the lock but does not answer)."""
    path = socket_path or paths.daemon_socket()
    try:
        info = _ask_status(path)
    except (DaemonUnavailable, RpcError, TimeoutError) as exc:
        holder = lock_holder(lock_path(path))
        if as_json:
            print(json.dumps({"running": False, "socket": str(path), "lockHolder": holder}))
        elif holder is not None:
            print(
                f"codecoder: a daemon holds the lock (pid {holder or '?'}) but does not "
                f"answer on {path}: {exc}; `codecoder daemon stop` sends it SIGTERM",
                file=sys.stderr,
            )
        else:
            print(f"no daemon is running (nothing answers on {path})")
            print("start one with `codecoder daemon --detach`")
        return EXIT_FAILED
    if as_json:
        print(json.dumps({"running": True, **info}))
    else:
        print(_describe(info, path))
    return EXIT_OK


def probe(socket_path: Path | None = None) -> tuple[bool | None, str]:
    """`status` in one line, for `codecoder doctor`: (True, what it serves) when a daemon
    answers, (None, how to start one) when none runs (clients then run their sessions
    in their own process: nothing is wrong), (False, why) when one holds the lock but
    does not answer (another cannot start, and `--attach` cannot reach it)."""
    path = socket_path or paths.daemon_socket()
    try:
        info = _ask_status(path)
    except (DaemonUnavailable, RpcError, TimeoutError) as exc:
        holder = lock_holder(lock_path(path))
        if holder is None:
            return None, f"not running (start one: codecoder daemon --detach) ({path})"
        return False, (
            f"pid {holder or '?'} holds the lock but does not answer on {path}: {exc} "
            "(codecoder daemon stop sends it SIGTERM)"
        )
    sessions = list(info.get("sessions", ()))
    running = sum(1 for s in sessions if s.get("running"))
    return True, (
        f"running: pid {info.get('pid')}, {len(sessions)} session(s) loaded, "
        f"{running} running ({info.get('socket') or path})"
    )


def stop(*, timeout: float = STOP_TIMEOUT, socket_path: Path | None = None) -> int:
    """Stop the running daemon as SIGTERM does (every turn cancelled, every session's
    state committed) and wait until it is gone: 0 when it stopped, or none ran; 1 when
    it did not stop within `timeout` seconds."""
    path = socket_path or paths.daemon_socket()
    lock = lock_path(path)
    running = 0
    try:
        with DaemonClient(path, timeout=ASK_TIMEOUT) as client:
            info = _status_of(client)
            pid = int(info["pid"])
            running = sum(1 for s in info.get("sessions", ()) if s.get("running"))
            client.call("_codecoder/shutdown", {}, timeout=ASK_TIMEOUT)
        how = ""
    except (DaemonUnavailable, RpcError, TimeoutError):
        holder = lock_holder(lock)
        if holder is None:
            print(f"no daemon is running (nothing answers on {path})")
            return EXIT_OK
        if not holder:
            print(f"codecoder: a daemon holds {lock} but its pid is not in it", file=sys.stderr)
            return EXIT_FAILED
        pid = holder
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        how = f" (nothing answers on {path}: it was sent SIGTERM)"
    if not _wait_gone(pid, lock, time.monotonic() + timeout):
        print(
            f"codecoder: the daemon (pid {pid}) did not stop within {timeout:g} s{how}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    turns = f"{running} running turn{'s' if running != 1 else ''} cancelled; " if running else ""
    print(f"stopped the daemon (pid {pid}){how}: {turns}every session's state is committed")
    return EXIT_OK


def _ask_status(path: Path) -> dict[str, Any]:
    with DaemonClient(path, timeout=ASK_TIMEOUT) as client:
        return _status_of(client)


def _status_of(client: DaemonClient) -> dict[str, Any]:
    """`_codecoder/daemon/status`, or what a daemon of an earlier version tells of it
    (`_codecoder/sessions/list`: its sessions and pid), so a daemon left running across
    an upgrade can still be seen and stopped."""
    hello = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {}}
    client.call("initialize", hello, timeout=ASK_TIMEOUT)
    try:
        return dict(client.call("_codecoder/daemon/status", {}, timeout=ASK_TIMEOUT))
    except RpcError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
    return dict(client.call("_codecoder/sessions/list", {}, timeout=ASK_TIMEOUT))


def _wait_gone(pid: int, lock: Path, deadline: float) -> bool:
    """Until the daemon has let go of its lock and its process has ended (or is a zombie
    its parent has yet to reap: it has done all it will do)."""
    while lock_holder(lock) is not None or not _ended(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _ended(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # no /proc: ask the process table
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def _describe(info: dict[str, Any], path: Path) -> str:
    """The human form of a status: the daemon, then a line per session."""
    lines = [f"a daemon is running: pid {info.get('pid')}"]
    if "uptime" in info:
        lines[0] += f", up {_duration(float(info['uptime']))}"
    if info.get("version"):
        lines[0] += f", version {info['version']}"
    lines.append(f"socket: {info.get('socket') or path}")
    sessions = list(info.get("sessions", ()))
    if not sessions:
        lines.append("no session loaded")
        return "\n".join(lines)
    running = sum(1 for s in sessions if s.get("running"))
    plural = "s" if len(sessions) != 1 else ""
    lines.append(f"{len(sessions)} session{plural} loaded, {running} running:")
    for session in sessions:
        clients = int(session.get("clients", 0))
        state = "running" if session.get("running") else "idle"
        attached = f"{clients} client{'s' if clients != 1 else ''}"
        lines.append(
            f"  {session.get('sessionId')}  {state:<7}  {attached:<9}  "
            f"{session.get('mode', '')}  {session.get('cwd', '')}"
        )
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"
