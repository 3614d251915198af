"""Real MCP servers we did not write, and managers that never outlive their test.

- `mcp-server-time` (PyPI, the reference servers' time server; in the dev extra) over
  stdio;
- `@modelcontextprotocol/server-everything` (npm, pinned by tests/mcp/node/
  package-lock.json) over stdio and streamable HTTP. CI runs `npm ci` in tests/mcp/node
  (.ci/run); otherwise it comes from pytest's cache folder (tests/node_packages.py).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent
from codecoder.kernel.ports import ToolContext
from codecoder.mcp.config import Selection, ServerSpec
from codecoder.mcp.manager import McpManager
from tests.node_packages import installed

NODE_DIR = Path(__file__).resolve().parent / "node"
EVERYTHING = Path("node_modules/@modelcontextprotocol/server-everything/dist/index.js")


def time_command() -> str:
    found = Path(sys.executable).with_name("mcp-server-time")
    if not found.is_file():
        pytest.skip("mcp-server-time is not installed (pip install -e '.[dev]')")
    return str(found)


def spec(name: str, command: str | None = None, *args: str, **fields: Any) -> ServerSpec:
    return ServerSpec(name=name, origin="user", source="test", command=command, args=args, **fields)


def time_spec(**fields: Any) -> ServerSpec:
    return spec("time", time_command(), "--local-timezone", "UTC", **fields)


@pytest.fixture(scope="session")
def everything(request: pytest.FixtureRequest) -> Path:
    """The server-everything entry point (dist/index.js); skips when it cannot be had."""
    folder = installed(
        request, NODE_DIR, EVERYTHING, what="@modelcontextprotocol/server-everything"
    )
    return folder / EVERYTHING


class Managers:
    """Starts managers and, at teardown, closes each and joins its loop thread."""

    def __init__(self) -> None:
        self.started: list[McpManager] = []
        self.lines: list[tuple[float, str, str, bytes]] = []

    def tap(self, server: str, direction: str, line: bytes) -> None:
        self.lines.append((time.monotonic(), server, direction, line))

    def __call__(self, *specs: ServerSpec, wait: float | None = 30.0) -> McpManager:
        manager = McpManager(Selection(servers=specs), tap=self.tap)
        self.started.append(manager)
        manager.start()
        if wait is not None:
            manager.wait_settled(wait)
        return manager

    def close(self) -> None:
        for manager in self.started:
            manager.close()
            assert manager.join(10), "the MCP loop thread did not end"


@pytest.fixture
def managers() -> Iterator[Managers]:
    made = Managers()
    yield made
    made.close()


@pytest.fixture
def events() -> list[AgentEvent]:
    return []


@pytest.fixture
def ctx(tmp_path: Path, events: list[AgentEvent]) -> ToolContext:
    return ToolContext(
        call_id="call_1", cancel=CancelToken(), workspace=tmp_path, emit=events.append
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServer:
    """server-everything's streamable HTTP transport as a child process on `port`."""

    def __init__(self, entry: Path, port: int) -> None:
        self.entry, self.port = entry, port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        env = {**os.environ, "PORT": str(self.port)}
        self.proc = subprocess.Popen(
            ["node", str(self.entry), "streamableHttp"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"server-everything exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError("server-everything did not listen within 30 s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def http_server(everything: Path) -> Iterator[HttpServer]:
    server = HttpServer(everything, free_port())
    server.start()
    yield server
    server.kill()


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()
