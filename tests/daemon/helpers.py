"""A real `codecoder daemon` for tests: started on a scripted model, stopped and reaped."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from codecoder import paths
from codecoder.daemon.client import DaemonClient
from codecoder.daemon.rpc import Connection

CLI = [sys.executable, "-m", "codecoder"]
WITH_NOFILE = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); os.execv(sys.argv[2], sys.argv[2:])"
)


def write_script(folder: Path, replies: list[Any]) -> Path:
    path = folder / "script.json"
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


class Daemon:
    """A daemon process of this test, stopped (and reaped) at the end."""

    def __init__(self, script: Path, *extra: str, nofile: int | None = None) -> None:
        """`nofile`: the daemon's limit of open files (RLIMIT_NOFILE), if not the usual."""
        args = [*CLI, "daemon", "--script", str(script), *extra]
        if nofile is not None:  # set, then the daemon exec'd in the same process
            args = [sys.executable, "-c", WITH_NOFILE, str(nofile), *args]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.socket = paths.daemon_socket()
        deadline = time.monotonic() + 15
        while not self._answers():
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "the daemon never listened"
            time.sleep(0.02)

    def _answers(self) -> bool:
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(str(self.socket))
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def client(self) -> DaemonClient:
        client = DaemonClient(self.socket)
        client.initialize()
        return client

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.communicate()
        return self.proc.returncode


class ClosingHandler:
    """A connection's handler that answers nothing and only notes the close."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def on_request(self, conn: Connection, request_id: Any, method: str, params: Any) -> None:
        pass

    def on_notification(self, conn: Connection, method: str, params: Any) -> None:
        pass

    def on_close(self, conn: Connection) -> None:
        self.closed.set()
