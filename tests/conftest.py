"""Suite-wide guards: no test touches the real home, and no test leaves a thread running."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from codecoder.kernel.handle import AgentHandle
    from codecoder.kernel.loop import AgentLoop


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """HOME and the XDG folders point into a fresh temp dir for every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_RUNTIME_DIR", "run"),
    ):
        path = home / sub
        path.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(var, str(path))
    return home


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every thread a test starts must have ended (joined) when the test ends."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for thread in leaked:
        thread.join(timeout=2.0)
    still = [t.name for t in leaked if t.is_alive()]
    assert not still, f"threads left running: {still}"


@pytest.fixture
def start_agent() -> Iterator[Callable[[AgentLoop], AgentHandle]]:
    """Starts a loop and gives its handle; at teardown, however the test ended (a failed
    assertion, a timeout), every agent it started is shut down and its provider readers
    joined, so one failure never leaves threads behind to fail the tests after it."""
    started: list[tuple[AgentLoop, AgentHandle]] = []

    def start(loop: AgentLoop) -> AgentHandle:
        handle = loop.start()
        started.append((loop, handle))
        return handle

    yield start
    for loop, handle in reversed(started):
        handle.shutdown(timeout=5)
        loop.join_readers(timeout=2)
