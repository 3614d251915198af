"""The structured trace (`--trace FILE`): the seeds' answer to "why did this event arrive
before that one?".

One JSON line per thing the kernel saw or did: every command, event, reply to a question
(and who gave it), permission decision, provider request (its hash and size), stream
event as the loop took it (text as the chunks that arrived together), compaction swap, and
note (a traceback the user was spared); sub-agents' lines carry their own `agent` name.
Every line has `seq`, one counter for the whole trace.

`seq` is the order a consumer saw: an event's number is taken, under the tracer's lock,
in the same step that puts the event on its channel, so sorting by `seq` gives exactly
the channel order, even with several threads emitting (a reader thread's raw stream
events, parallel sub-agents). A command's number is taken before it takes effect, so a
Cancel always sorts before the Done it causes.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal

import msgspec

from codecoder.kernel import codec
from codecoder.kernel.events import AskUser, ConfirmRequest, Done, Error
from codecoder.kernel.messages import Message
from codecoder.kernel.ports import ProviderRequest, ToolSpec

Direction = Literal[
    "command", "event", "reply", "decision", "request", "stream", "compaction", "note"
]

_FLUSHED = frozenset({Done, Error, ConfirmRequest, AskUser})
_FLUSHED_LINES = frozenset({"command", "reply", "note"})
_PENDING = 256
"""Lines kept before they are encoded and written (a flush writes them at once)."""
_monotonic = time.monotonic


class _Line(msgspec.Struct, frozen=True, gc=False):
    seq: int
    t: float
    thread: str
    agent: str
    turn: int
    dir: Direction
    data: Any


class _RequestLine:
    """A request line's data, finished when the line is written rather than on the
    round's path. What is new to the agent's running hash is taken at once (a short
    tuple: holding the whole view until the write would make every garbage collection
    walk it); the encoding and hashing run with the other pending lines, in `seq`
    order, which is the order each agent sent its requests."""

    __slots__ = ("body", "digest", "head", "messages", "new", "purpose")

    def __init__(self, digest: RequestDigest, request: ProviderRequest, body: bool) -> None:
        self.digest, self.purpose, self.messages = digest, request.purpose, len(request.messages)
        self.head, self.new = digest.take(request)
        self.body = msgspec.Raw(codec.encode(request)) if body else None

    def data(self) -> dict[str, object]:
        sha256, size = self.digest.add(self.head, self.new)
        data: dict[str, object] = {
            "purpose": self.purpose,
            "messages": self.messages,
            "bytes": size,
            "sha256": sha256,
        }
        if self.body is not None:
            data["body"] = self.body
        return data


def _enc_hook(value: Any) -> Any:
    if type(value) is _RequestLine:
        return value.data()
    return codec.enc_hook(value)


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


class Tracer:
    """Thread-safe JSONL writer shared by an agent and its sub-agents. A line is kept as
    it is and encoded with the others at the next flush point (a command, a question,
    a turn's end, a reply, a note, close, or 256 lines): 256 lines in one call cost less
    than a call for each line (+5.9% against +7.7% of a round's CPU for the lines alone,
    docs/benchmarks.md), though the events are held meanwhile. Encoding later is sound
    because what is traced is a value: events, commands and stream items are frozen
    structs, and the loop hands fresh dicts it never touches again.
    `bodies`: provider requests are written whole (`--trace-bodies`)."""

    def __init__(self, path: Path | str, *, bodies: bool = False) -> None:
        self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 - closed by close()
        self._open = True
        self._lock = threading.Lock()
        self._seq = 0
        self._pending: list[_Line] = []
        self._threads = threading.local()
        self.bodies = bodies

    def request(
        self, agent: str, turn: int, request: ProviderRequest, digest: RequestDigest
    ) -> None:
        """A request's hash and size (and with `--trace-bodies` the request itself), made
        when the line is written: two requests with the same hash sent the same thing."""
        self.line("request", agent, turn, _RequestLine(digest, request, self.bodies))

    def note(self, agent: str, turn: int, kind: str, detail: str) -> None:
        self.line("note", agent, turn, {"type": kind, "detail": detail})

    def line(
        self,
        direction: Direction,
        agent: str,
        turn: int,
        value: Any,
        put: Callable[[Any], object] | None = None,
    ) -> None:
        """A line of any kind. An event: `put` puts it on its channel under the same lock
        (see the module doc), and always, even when writing the trace fails. A command:
        before it takes effect (a Cancel sorts before what it causes). Commands, replies,
        notes, questions and ends are written at once, before the event is put: a client
        that reads the trace when it is asked something or told a turn ended finds
        every line up to that one. The rest is written when it suits."""
        threads = self._threads
        try:
            thread = threads.name
        except AttributeError:  # this thread's first line
            thread = threads.name = threading.current_thread().name
        lock = self._lock
        lock.acquire()  # not `with`: it costs twice as much, on every event (micro-timed)
        try:
            self._seq = seq = self._seq + 1
            if self._open:
                pending = self._pending
                pending.append(_Line(seq, _monotonic(), thread, agent, turn, direction, value))
                if (
                    direction in _FLUSHED_LINES
                    or type(value) in _FLUSHED
                    or len(pending) >= _PENDING
                ):
                    self._write()  # before the put: whoever the event wakes reads it all
        finally:
            if put is not None:
                put(value)
            lock.release()

    def _write(self) -> None:
        """The pending lines, encoded in one call (under the lock). They are dropped even
        when that fails, so that one failure is not raised again at every line."""
        try:
            self._file.write(_encoder.encode_lines(self._pending))
            self._file.flush()
        finally:
            self._pending.clear()

    def close(self) -> None:
        with self._lock:
            if self._open:
                self._open = False
                if self._pending:
                    self._write()
                self._file.close()

    @staticmethod
    def read(path: Path | str) -> list[dict[str, Any]]:
        """The records of a trace file (for tests and `codecoder trace`)."""
        with open(path, "rb") as handle:
            return [msgspec.json.decode(line) for line in handle if line.strip()]


Head = tuple[str, tuple[ToolSpec, ...], str]
"""What a request says besides its messages: system prompt, tools, purpose."""


class RequestDigest:
    """The sha256 and size of each request of one agent (each has its own: sub-agents
    run on threads of their own), without encoding the whole history for every round
    (that made tracing double the cost of a round at 1,000 rounds): one running hash
    over the head (system prompt, tools, purpose), then each message as it joined the
    view, each encoded and hashed once. A request's hash is that running hash's digest;
    it starts again when the head changes or a compaction swaps the view. Equal hashes,
    equal requests; `bytes` is the sum of the parts' JSON.

    `take` (cheap, when the request is sent, on the agent's thread) says what is new;
    `add` (when the line is written, in the same order, under the tracer's lock on
    whichever thread writes) hashes it. The two share no field."""

    def __init__(self) -> None:
        self._head: Head | None = None
        self._count = 0  # messages already taken, and the ids of the first and last
        self._first = self._last = -1
        self._hash: Any = None
        self._size = 0

    def digest(self, request: ProviderRequest) -> tuple[str, int]:
        return self.add(*self.take(request))

    def take(self, request: ProviderRequest) -> tuple[Head | None, tuple[Message, ...]]:
        """The head when the hash starts again (else None), and the new messages."""
        messages, count = request.messages, self._count
        head = self._head
        if (
            head is None
            or count > len(messages)
            or (count and (messages[0].id != self._first or messages[count - 1].id != self._last))
            or not (request.system is head[0] or request.system == head[0])
            or not (request.tools is head[1] or request.tools == head[1])
            or request.purpose != head[2]
        ):
            head = self._head = (request.system, request.tools, request.purpose)
            count = 0
        else:
            head = None
        if messages:
            self._count, self._first, self._last = len(messages), messages[0].id, messages[-1].id
        else:
            self._count = 0
        return head, messages[count:]

    def add(self, head: Head | None, new: tuple[Message, ...]) -> tuple[str, int]:
        if head is not None:
            encoded = codec.encode(head)
            self._hash, self._size = hashlib.sha256(encoded), len(encoded)
        running = self._hash
        for message in new:
            body = codec.encode(message)
            running.update(body)
            self._size += len(body)
        return running.copy().hexdigest(), self._size
