"""`codecoder daemon`: sessions that outlive their clients, served over a Unix socket.

An accept thread takes connections on `$XDG_RUNTIME_DIR/codecoder/daemon.sock` (else
`/tmp/codecoder-$UID/`); the folder is 0700 and ours, the socket 0600, and a peer of
another user (SO_PEERCRED) is refused before it can send a byte. One daemon per user: a
lock file held for the daemon's life says whether one runs; a socket left by a dead one
is replaced. SIGTERM, SIGHUP and SIGINT (and `_codecoder/shutdown`) cancel every
session's turn, commit its state, and end the daemon with exit 0.

Idle, the daemon is threads blocked in `accept` and `readline`: no polling, no CPU.

The accept thread outlives every error but the daemon's stop. Out of files (EMFILE),
the next client is taken with a file kept in reserve for it and, if no file is free by
then, told so in one JSON-RPC error and closed, so it hears why instead of hanging; any
other failure waits a little (ACCEPT_BACKOFF, doubling) and accepts again. Once files
are free again the next `initialize` is answered.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import socket
import stat
import struct
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from codecoder import paths
from codecoder.daemon.handler import AcpHandler, Hub, out_of_files_message
from codecoder.daemon.rpc import SERVER_ERROR, Connection, encode

MAX_SOCKET_PATH = 107
"""sockaddr_un holds 108 bytes with the terminating NUL."""
ACCEPT_BACKOFF = (0.005, 1.0)
"""The first and the longest wait after a failed accept (seconds), as Go's net/http."""


class DaemonError(Exception):
    """The daemon cannot start (one already runs, the folder is not ours …)."""


class DaemonServer:
    def __init__(self, hub: Hub, path: Path | None = None) -> None:
        self.hub = hub
        self.path = path or paths.daemon_socket()
        self.handler = AcpHandler(hub, on_shutdown=self.request_stop, socket=str(self.path))
        self._stop = threading.Event()
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._accepting: threading.Thread | None = None
        self._connections: set[Connection] = set()
        self._guard = threading.Lock()
        self._reserve: int | None = None
        """A file held to accept, and turn away, a client when the files run out."""

    # --- starting --------------------------------------------------------------------

    def start(self) -> None:
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH:
            raise DaemonError(f"the socket path is too long for a Unix socket: {self.path}")
        folder = self.path.parent
        _own_private_folder(folder)
        self._lock_fd = _lock(lock_path(self.path))
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # we hold the lock: a socket here is a dead daemon's
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        listener.listen(64)
        self._listener = listener
        self._reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self._accepting = threading.Thread(target=self._accept_loop, name="accept", daemon=True)
        self._accepting.start()

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        wait = 0.0
        while not self._stop.is_set():
            try:
                sock, _ = listener.accept()
            except OSError as exc:
                if self._stop.is_set():
                    break
                spare = exc.errno in (errno.EMFILE, errno.ENFILE) and self._restock()
                taken = self._accept_on_reserve(listener) if spare else None
                if taken is None:
                    wait = min(max(wait * 2, ACCEPT_BACKOFF[0]), ACCEPT_BACKOFF[1])
                    if wait == ACCEPT_BACKOFF[0]:
                        log(f"accepting failed, trying again: {exc}")
                    self._stop.wait(wait)
                    continue
                sock = taken
                if not self._restock():  # still out of files: it is told so, not served
                    _turn_away(sock)
                    continue
            wait = 0.0
            try:
                self._serve(sock)
            except (OSError, RuntimeError) as exc:  # no thread or file left for it
                sock.close()
                log(f"a connection could not be served: {exc}")

    def _accept_on_reserve(self, listener: socket.socket) -> socket.socket | None:
        """Out of files, accept fails at once, client or none: give the reserve file up
        and wait for the next client with its slot."""
        assert self._reserve is not None
        os.close(self._reserve)
        self._reserve = None
        try:
            return listener.accept()[0]
        except OSError:
            return None

    def _restock(self) -> bool:
        """Hold the reserve file (True), or find that the files are all in use."""
        if self._reserve is None:
            try:
                self._reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return False
        return True

    def _serve(self, sock: socket.socket) -> None:
        if _peer_uid(sock) != os.getuid():
            sock.close()
            return
        conn = Connection.over_socket(sock, _Tracked(self), name=f"client-{sock.fileno()}")
        with self._guard:
            self._connections.add(conn)
        try:
            conn.start()
        except RuntimeError:
            self.forget(conn)
            raise

    # --- stopping ----------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    def serve_until_stopped(self) -> None:
        """Block the main thread until a signal or `_codecoder/shutdown`, then stop."""
        handlers = {
            signum: signal.signal(signum, self._on_signal)
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
        }
        try:
            while not self._stop.wait(3600):
                pass
        finally:
            for signum, previous in handlers.items():
                signal.signal(signum, previous)
            self.stop()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        if self._accepting is not None:
            self._accepting.join(5)
        self.hub.close()
        with self._guard:
            connections = list(self._connections)
        for conn in connections:
            conn.close()
            conn.join(2)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def forget(self, conn: Connection) -> None:
        with self._guard:
            self._connections.discard(conn)


class _Tracked:
    """The server's handler: the ACP handler, and the server forgets closed connections."""

    def __init__(self, server: DaemonServer) -> None:
        self._server = server
        self._acp = server.handler

    def on_request(self, conn: Connection, request_id: Any, method: str, params: Any) -> None:
        self._acp.on_request(conn, request_id, method, params)

    def on_notification(self, conn: Connection, method: str, params: Any) -> None:
        self._acp.on_notification(conn, method, params)

    def on_close(self, conn: Connection) -> None:
        self._acp.on_close(conn)
        self._server.forget(conn)


def _turn_away(sock: socket.socket) -> None:
    """Tell a client the daemon cannot serve it now, in one JSON-RPC error, and close."""
    refusal = {"code": SERVER_ERROR, "message": out_of_files_message()}
    with sock, contextlib.suppress(OSError):
        sock.send(encode({"jsonrpc": "2.0", "id": None, "error": refusal}), socket.MSG_DONTWAIT)


def _own_private_folder(folder: Path) -> None:
    """Create the socket's folder 0700, or check that an existing one is ours and 0700."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise DaemonError(f"{folder} is not a folder of yours: refusing to put the socket there")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)


def lock_path(socket_path: Path) -> Path:
    """The lock file a running daemon holds, next to its socket."""
    return socket_path.parent / "daemon.lock"


def lock_holder(path: Path) -> int | None:
    """The pid of the daemon that holds the lock file `path` (0 if it wrote none yet), or
    None when no process holds it. Asked when the socket does not answer, and while a
    stopping daemon is waited for: it lets go of the lock last, once its sessions are
    committed and its socket removed. The probe takes a shared lock for an instant: a
    daemon starting in that instant is told one runs, as it would be a moment earlier."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode(errors="replace").strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DaemonError(f"a daemon is already running ({path.parent / 'daemon.sock'})") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end (Linux SO_PEERCRED)."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return -1
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def log(message: str) -> None:
    print(f"codecoder daemon: {message}", file=sys.stderr, flush=True)
