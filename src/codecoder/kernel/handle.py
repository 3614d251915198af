"""AgentHandle: what a client holds (a command sender and an event receiver).

The command side flips a turn's CancelToken on the caller's thread, at once: a Cancel is
never queued behind events or behind a running tool (invariant 4). Every submitted
message gets its own token, created here, so a Cancel that races the loop picking the
message up is never lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.channel import EventChannel
from codecoder.kernel.commands import (
    AgentCommand,
    Cancel,
    Compact,
    ProcessMessage,
    Shutdown,
    Steer,
)
from codecoder.kernel.events import AgentEvent, Done
from codecoder.kernel.messages import Message, user_message

if TYPE_CHECKING:
    from codecoder.kernel.trace import Tracer


class AgentClosed(Exception):
    """The agent thread has ended; it takes no more commands."""


CLOSED = object()
"""Put on the event queue when the agent thread ends: the event stream is over."""


class Envelope:
    """A command as the loop receives it: with the turn token made at submit time, and
    the turn number a message will run as (numbered here, in submit order, so the trace
    files a queued message under its own turn, not the one running when it came)."""

    __slots__ = ("command", "token", "turn")

    def __init__(self, command: AgentCommand, token: CancelToken | None, turn: int) -> None:
        self.command = command
        self.token = token
        self.turn = turn


class AgentHandle:
    def __init__(
        self,
        commands: SimpleQueue[Envelope],
        events: EventChannel,
        thread: threading.Thread,
        *,
        on_shutdown: Callable[[], None],
        turn: Callable[[], int],
        first_turn: int = 0,
        name: str = "agent",
        tracer: Tracer | None = None,
    ) -> None:
        self._commands = commands
        self._events = events
        self._thread = thread
        self._on_shutdown = on_shutdown
        self._turn = turn
        self._turns = first_turn
        self.name = name
        self._tracer = tracer
        self._lock = threading.Lock()
        self._pending: list[CancelToken] = []
        self._turn_tokens: set[CancelToken] = set()
        self._steers: list[Message] = []
        self._closed = False
        self._ended = False

    # --- commands ------------------------------------------------------------------

    def submit(self, command: AgentCommand, *, parent: CancelToken | None = None) -> None:
        """Send user intent. Cancel and Shutdown take effect before this returns. A
        message's turn token is a child of `parent` when given (a sub-agent's turn is
        cancelled with the parent's)."""
        with self._lock:
            if self._closed or not self._thread.is_alive():
                raise AgentClosed("the agent has shut down")
            turn = self._turn()
            if isinstance(command, Steer) and self._turn_tokens:
                if self._tracer is not None:
                    self._tracer.line("command", self.name, turn, command)
                self._steers.append(command.message)  # the loop takes it at a boundary
                return
            if isinstance(command, Steer):  # no turn to join: it is the next message
                command = ProcessMessage(command.message)
            if isinstance(command, ProcessMessage):
                self._turns += 1
                turn = self._turns
            if self._tracer is not None:
                self._tracer.line("command", self.name, turn, command)
            token: CancelToken | None = None
            if isinstance(command, ProcessMessage | Compact):
                token = parent.child() if parent is not None else CancelToken()
                self._pending.append(token)
                if isinstance(command, ProcessMessage):
                    self._turn_tokens.add(token)
            elif isinstance(command, Cancel | Shutdown):
                reason = "shutdown" if isinstance(command, Shutdown) else "cancelled"
                self._steers.clear()  # what the user asked for so far stops: steers too
                for pending in list(self._pending):
                    pending.cancel(reason)
                if isinstance(command, Shutdown):
                    self._closed = True
                    self._on_shutdown()
            self._commands.put(Envelope(command, token, turn))

    def send(self, text: str, *, parent: CancelToken | None = None) -> None:
        self.submit(ProcessMessage(user_message(text)), parent=parent)

    def cancel(self) -> None:
        self.submit(Cancel())

    def compact(self) -> None:
        self.submit(Compact())

    def steer(self, text: str) -> None:
        self.submit(Steer(user_message(text)))

    def take_steers(self) -> list[Message]:
        """The steers waiting for the running turn (the loop, at a round boundary)."""
        with self._lock:
            taken, self._steers = self._steers, []
        return taken

    def shutdown(self, timeout: float | None = 10.0) -> None:
        """Stop the running turn, end the agent thread and wait for it."""
        with self._lock:
            closed = self._closed or not self._thread.is_alive()
        if not closed:
            self.submit(Shutdown())
        self._thread.join(timeout)

    def turn_finished(self, token: CancelToken) -> list[Message]:
        """Called by the loop before a turn's Done: a later Cancel leaves it alone. Steers
        that came too late for the turn, with no other turn queued to take them, become
        the next turn's message; returns them (the loop says so before Done)."""
        token.detach()
        with self._lock:
            if token in self._pending:
                self._pending.remove(token)
            self._turn_tokens.discard(token)
            if not self._steers or self._turn_tokens or self._closed:
                return []
            late, self._steers = self._steers, []
            message = user_message("\n\n".join(m.text for m in late))
            self._turns += 1
            follow = CancelToken()
            self._pending.append(follow)
            self._turn_tokens.add(follow)
            self._commands.put(Envelope(ProcessMessage(message), follow, self._turns))
        return late

    # --- events --------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def statistics(self) -> dict[str, int]:
        """`queued_events`: events the agent has put out that the client has not taken
        yet (the backlog of a client that reads slower than the agent streams), and
        `output_in_flight`: the characters of live output among them."""
        return {
            "queued_events": self._events.qsize(),
            "output_in_flight": self._events.statistics()["output_in_flight"],
        }

    def next_event(self, timeout: float | None = None) -> AgentEvent | None:
        """The next event; None when the stream has ended. Raises TimeoutError."""
        if self._ended:
            return None
        try:
            item = self._events.get(timeout=timeout)
        except Empty:
            raise TimeoutError(f"no event within {timeout} s") from None
        if item is CLOSED:
            self._ended = True
            return None
        return item  # type: ignore[return-value]

    def events(self) -> Iterator[AgentEvent]:
        """Every event until the agent thread ends (after shutdown)."""
        while (event := self.next_event()) is not None:
            yield event

    def turn(self, timeout: float | None = None) -> Iterator[AgentEvent]:
        """The events of the current turn up to and including its Done; AgentClosed if
        the stream ends first. `timeout` applies to each event."""
        while True:
            event = self.next_event(timeout)
            if event is None:
                raise AgentClosed("the event stream ended before Done")
            yield event
            if isinstance(event, Done):
                return

    def wait_done(self, timeout: float | None = None) -> list[AgentEvent]:
        """The events of the current turn up to and including its Done."""
        return list(self.turn(timeout))
