"""One asyncio event loop on a thread of its own: the edge where the asyncio-only MCP SDK
meets the kernel's OS threads (DESIGN.md §1, §6).

The thread runs `main` (the manager's coroutine) with `asyncio.run`; other threads hand
it work with `submit` (a coroutine; they get a concurrent.futures.Future) and `call` (a
plain function run on the loop). When `main` returns, asyncio.run cancels what is left,
closes async generators and the loop, and the thread ends; `join` waits for that.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures

T = TypeVar("T")


class LoopClosed(Exception):
    """The loop has ended (or never started): nothing more runs on it."""


class LoopThread:
    def __init__(self, main: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        self._main = main
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self.error: BaseException | None = None
        """What `main` raised, if it did (the manager reports it)."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        import asyncio

        async def wrapper() -> None:
            with self._lock:
                self._loop = asyncio.get_running_loop()
            self._started.set()
            await self._main()

        try:
            asyncio.run(wrapper())
        except BaseException as exc:  # reported by whoever joins; never lost
            self.error = exc
        finally:
            with self._lock:
                self._loop = None
            self._started.set()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._thread.ident is None:
            raise LoopClosed("the MCP event loop was never started")
        self._started.wait()
        with self._lock:
            if self._loop is None:
                raise LoopClosed("the MCP event loop has ended")
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the loop as a task of its own; raises LoopClosed (closing `coro`)
        when the loop has ended."""
        import asyncio

        try:
            loop = self._running_loop()
            return asyncio.run_coroutine_threadsafe(coro, loop)
        except (LoopClosed, RuntimeError) as exc:  # RuntimeError: closed under our feet
            coro.close()
            raise LoopClosed("the MCP event loop has ended") from exc

    def call(self, fn: Callable[..., object], *args: object) -> bool:
        """Run `fn(*args)` on the loop soon; False when the loop has ended."""
        try:
            self._running_loop().call_soon_threadsafe(fn, *args)
        except (LoopClosed, RuntimeError):
            return False
        return True

    def join(self, timeout: float) -> bool:
        """Wait for the thread to end; False when it is still running after `timeout`."""
        if self._thread.ident is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()
