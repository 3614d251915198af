"""The event channel from a loop to its client, with live output bounded.

Tokens and most events are small, and the client takes them as they come. A tool's live
output is different: a command can print a gigabyte faster than a client that writes it
to a slow pipe can take it, and every chunk waiting in the channel is memory
(`codecoder exec --json | slow-reader` held 755 MB of a 1 GB output). So the channel
counts the characters of ToolOutput (a sub-agent's too) put and not yet taken, and a
tool that would put more while OUTPUT_IN_FLIGHT are waiting is held in `wait_room` until
the client takes some: the command then blocks on its full pipe, as it would writing to
a slow terminal. Everything else is never held, and the wait ends at once when the
turn's token flips, so a cancel is never queued behind output (invariant 4).
"""

from __future__ import annotations

import threading
from queue import SimpleQueue

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, Subagent, ToolOutput

OUTPUT_IN_FLIGHT = 4 * 1024 * 1024
"""Characters of live output put and not yet taken past which a tool waits."""


def live_output(item: object) -> tuple[tuple[str, ...], ToolOutput] | None:
    """The ToolOutput `item` is or wraps, with the sub-agents around it (outermost
    first); None for any other event."""
    agents: list[str] = []
    while type(item) is Subagent:
        agents.append(item.agent_id)
        item = item.event
    return (tuple(agents), item) if type(item) is ToolOutput else None


class EventChannel:
    """A SimpleQueue of events (and the loop's end marker) that knows how much live
    output it holds. `put` and `get` never wait on it; `wait_room` does."""

    def __init__(self, limit: int = OUTPUT_IN_FLIGHT) -> None:
        self._queue: SimpleQueue[object] = SimpleQueue()
        self._limit = limit
        self._room = threading.Condition(threading.Lock())
        self._output = 0

    def put(self, item: object) -> None:
        output = live_output(item)
        if output is not None:
            with self._room:
                self._output += len(output[1].chunk)
        self._queue.put(item)

    def get(self, timeout: float | None = None) -> object:
        """The next item; raises queue.Empty after `timeout` seconds."""
        item = self._queue.get(timeout=timeout)
        output = live_output(item)
        if output is not None:
            with self._room:
                self._output -= len(output[1].chunk)
                if self._output <= self._limit:
                    self._room.notify_all()
        return item

    def qsize(self) -> int:
        return self._queue.qsize()

    def wait_room(self, event: AgentEvent, cancel: CancelToken) -> None:
        """Before `event` is put: when it is live output and the client has more than the
        limit to take, wait until it has taken enough or `cancel` flips."""
        if live_output(event) is None:
            return
        with self._room:
            if self._output <= self._limit:
                return
        unregister = cancel.on_cancel(self._wake)
        try:
            with self._room:
                while self._output > self._limit and not cancel.is_cancelled():
                    self._room.wait()
        finally:
            unregister()

    def statistics(self) -> dict[str, int]:
        return {"queued": self._queue.qsize(), "output_in_flight": self._output}

    def _wake(self) -> None:
        with self._room:
            self._room.notify_all()
