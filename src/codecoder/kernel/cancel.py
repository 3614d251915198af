"""CancelToken: the one way work is told to stop (seed §3.2, DESIGN.md invariant 4).

Sticky like Trio's cancel scopes: once flipped, every later check says so. Waiting work
never polls: it blocks on the token (`wait`) or registers a callback that wakes whatever
it is blocked on (a queue, a socket, a child process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Cancelled(Exception):
    """Raised at a safe point when the token has been flipped."""


class CancelToken:
    __slots__ = ("_callbacks", "_detach", "_event", "_lock", "_next_key", "_reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], object]] = {}
        self._reason = ""
        self._next_key = 0
        self._detach: Callable[[], None] = _noop

    @property
    def reason(self) -> str:
        return self._reason

    def cancel(self, reason: str = "cancelled") -> bool:
        """Flip the token. Returns False when it was already flipped. Callbacks run on the
        flipping thread, outside the lock, and must not block."""
        with self._lock:
            if self._event.is_set():
                return False
            self._reason = reason
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()
        return True

    def is_cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """A safe point: raise Cancelled if the token has been flipped."""
        if self._event.is_set():
            raise Cancelled(self._reason)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until flipped or until `timeout`; True when flipped."""
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run `callback` once when the token flips (at once if it already has).
        Returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                key = self._next_key
                self._next_key += 1
                self._callbacks[key] = callback
                return lambda: self._unregister(key)
        callback()
        return _noop

    def child(self) -> CancelToken:
        """A token that flips with this one (but not the other way round). `detach()`
        it when its work is over, so a long-lived parent does not collect callbacks."""
        child = CancelToken()
        unregister = self.on_cancel(lambda: child.cancel(self._reason))
        child._detach = unregister
        child.on_cancel(unregister)
        return child

    def detach(self) -> None:
        """Stop following the parent (a no-op for a token made without one)."""
        self._detach()

    def _unregister(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)

    def statistics(self) -> dict[str, object]:
        return {"cancelled": self.is_cancelled(), "callbacks": len(self._callbacks)}


def _noop() -> None:
    return None
