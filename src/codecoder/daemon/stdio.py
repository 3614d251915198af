"""`codecoder acp`: the same ACP handler over stdin and stdout, for editors (Zed,
JetBrains, Neovim plugins) that start their agent as a child process.

Standard output carries protocol lines and nothing else: the protocol writes to a copy
of fd 1, and fd 1 itself is pointed at stderr, so a stray print (ours, a library's, a
child process's) cannot corrupt the stream. The sessions live in this process and end
with it, when the editor closes our stdin.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import BinaryIO

from codecoder.daemon.handler import AcpHandler, Hub
from codecoder.daemon.rpc import Connection


def serve_stdio(hub: Hub) -> int:
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    done = threading.Event()
    handler = AcpHandler(hub, on_shutdown=done.set)

    class _Stdio:
        def on_request(
            self, conn: Connection, request_id: object, method: str, params: object
        ) -> None:
            handler.on_request(conn, request_id, method, params)

        def on_notification(self, conn: Connection, method: str, params: object) -> None:
            handler.on_notification(conn, method, params)

        def on_close(self, conn: Connection) -> None:
            handler.on_close(conn)
            done.set()

    def write(frame: bytes) -> None:
        write_all(protocol_out, frame)

    conn = Connection(sys.stdin.buffer, write, _Stdio(), name="stdio")
    conn.start()
    with contextlib.suppress(KeyboardInterrupt):
        done.wait()
    hub.close()
    conn.close()
    protocol_out.close()
    return 0


def write_all(out: BinaryIO, frame: bytes) -> None:
    """All of `frame`: an unbuffered write is one write(2), which a signal (a command's
    child ending: SIGCHLD) cuts short while a slow editor keeps the pipe full; the rest
    was lost, and the editor read half a frame joined to the next."""
    view = memoryview(frame)
    while view:
        view = view[out.write(view) or 0 :]
