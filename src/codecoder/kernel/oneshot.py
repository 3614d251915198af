"""The reply oneshot (seed §3.8): how an answer reaches the tool that asked.

A question event (AskUser, ConfirmRequest) carries its own Oneshot; the client answers
into it and never into the command channel. Across a process boundary the oneshot
travels as its `request_id`, and the answer comes back addressed to that id.
"""

from __future__ import annotations

import itertools
import threading
from typing import Generic, TypeVar

from codecoder.kernel.cancel import Cancelled, CancelToken

T = TypeVar("T")

_ids = itertools.count(1)


class OneshotError(Exception):
    """A second send on the same oneshot."""


class Oneshot(Generic[T]):
    __slots__ = ("_closed", "_event", "_lock", "_sent", "_value", "by", "request_id")

    def __init__(self, request_id: str | None = None) -> None:
        self.request_id = request_id or f"req_{next(_ids)}"
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._sent = False
        self._closed = False
        self._value: T | None = None
        self.by = ""
        """Who answered (a client's name, `stdin`, `timeout` …), for the trace and the
        record; empty until answered."""

    def send(self, value: T, *, by: str = "client") -> bool:
        """Deliver the answer. False when nobody waits any more (the asker was cancelled
        or another client answered first is not a second send: that one raises)."""
        with self._lock:
            if self._sent:
                raise OneshotError(f"{self.request_id} was already answered")
            self._sent = True
            if self._closed:
                return False
            self._value = value
            self.by = by
        self._event.set()
        return True

    def close(self) -> None:
        """The receiver gives up: later sends return False."""
        with self._lock:
            self._closed = True
        self._event.set()

    @property
    def answered(self) -> bool:
        return self._sent

    def recv(self, timeout: float | None = None, cancel: CancelToken | None = None) -> T:
        """Block for the answer. Raises TimeoutError, or Cancelled when `cancel` flips
        first; either way the oneshot is closed, so a late answer is refused."""
        unregister = cancel.on_cancel(self._event.set) if cancel is not None else None
        try:
            self._event.wait(timeout)
            with self._lock:
                if self._sent and not self._closed:
                    return self._value  # type: ignore[return-value]
                self._closed = True
            if cancel is not None and cancel.is_cancelled():
                raise Cancelled(cancel.reason)
            raise TimeoutError(f"no answer to {self.request_id} within {timeout} s")
        finally:
            if unregister is not None:
                unregister()

    def __repr__(self) -> str:
        return f"Oneshot({self.request_id!r})"
