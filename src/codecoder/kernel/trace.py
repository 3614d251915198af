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
from typing import IO, Any, Literal, TypeVar

import msgspec

from codecoder.kernel import codec
from codecoder.kernel.events import AskUser, ConfirmRequest, Done, Error
from codecoder.kernel.ports import ProviderRequest

T = TypeVar("T")

Direction = Literal[
    "command", "event", "reply", "decision", "request", "stream", "compaction", "note"
]

_FLUSHED = frozenset({Done, Error, ConfirmRequest, AskUser})
_FLUSHED_LINES = frozenset({"reply", "note"})
_BUFFER = 1 << 16
"""Bytes of lines kept before a write to the file (a flush writes them at once)."""


class _Line(msgspec.Struct, frozen=True, gc=False):
    seq: int
    t: float
    thread: str
    agent: str
    turn: int
    dir: Direction
    data: Any


_encoder = msgspec.json.Encoder(enc_hook=codec.enc_hook)


class Tracer:
    """Thread-safe JSONL writer shared by an agent and its sub-agents. Lines are buffered
    and written on commands, questions, turn ends and close, so tracing a token flood
    stays cheap (bench/bench_replay.py). `bodies`: provider requests are written whole
    (`--trace-bodies`)."""

    def __init__(self, path: Path | str, *, bodies: bool = False) -> None:
        self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 - closed by close()
        self._open = True
        self._lock = threading.Lock()
        self._seq = 0
        self._buffer = bytearray()
        self._threads = threading.local()
        self.bodies = bodies

    def command(self, agent: str, turn: int, command: Any) -> None:
        """Before the command takes effect (a Cancel sorts before what it causes)."""
        self.line("command", agent, turn, command, flush=True)

    def event(self, agent: str, turn: int, event: T, put: Callable[[T], object]) -> None:
        """Number the event and put it on its channel in one step (see the module doc)."""
        self.line("event", agent, turn, event, put, flush=type(event) in _FLUSHED)

    def note(self, agent: str, turn: int, kind: str, detail: str) -> None:
        self.line("note", agent, turn, {"type": kind, "detail": detail})

    def line(
        self,
        direction: Direction,
        agent: str,
        turn: int,
        value: Any,
        put: Callable[[Any], object] | None = None,
        *,
        flush: bool | None = None,
    ) -> None:
        """A line of any kind; `put` puts `value` on its channel under the same lock.
        `flush` None: replies and notes are written at once, the rest when it suits."""
        threads = self._threads
        try:
            thread = threads.name
        except AttributeError:  # this thread's first line
            thread = threads.name = threading.current_thread().name
        with self._lock:
            self._seq += 1
            if put is not None:
                put(value)
            if not self._open:
                return
            line = _Line(self._seq, time.monotonic(), thread, agent, turn, direction, value)
            buffer = self._buffer
            _encoder.encode_into(line, buffer, -1)
            buffer += b"\n"
            if flush is None:
                flush = direction in _FLUSHED_LINES
            if flush or len(buffer) > _BUFFER:
                self._file.write(buffer)
                self._file.flush()
                buffer.clear()

    def close(self) -> None:
        with self._lock:
            if self._open:
                self._open = False
                self._file.write(self._buffer)
                self._buffer.clear()
                self._file.close()

    @staticmethod
    def read(path: Path | str) -> list[dict[str, Any]]:
        """The records of a trace file (for tests and `codecoder trace`)."""
        with open(path, "rb") as handle:
            return [msgspec.json.decode(line) for line in handle if line.strip()]


class RequestDigest:
    """The sha256 and size of each request of one agent (each has its own: sub-agents
    run on threads of their own), without encoding the whole history for every round
    (that made tracing double the cost of a round at 1,000 rounds): each message is
    encoded and hashed once, into one running hash of the view, and a request's hash
    continues the hash of its system prompt, tools and purpose (kept while they stay the
    same objects) with the view's. Equal hashes, equal requests; `bytes` is the sum of the
    parts' JSON."""

    def __init__(self) -> None:
        self._ids: list[int] = []  # the messages hashed into `_view`, in order
        self._view = hashlib.sha256()
        self._size = 0
        self._head: tuple[tuple[object, object, str], Any, int] | None = None

    def digest(self, request: ProviderRequest) -> tuple[str, int]:
        messages, ids = request.messages, self._ids
        kept = len(ids)
        if kept > len(messages) or (
            kept and (ids[0] != messages[0].id or ids[-1] != messages[kept - 1].id)
        ):
            ids.clear()  # a compaction swapped the view: start again
            self._view, self._size, kept = hashlib.sha256(), 0, 0
        view = self._view
        for message in messages[kept:]:
            body = codec.encode(message)
            view.update(body)
            self._size += len(body)
            ids.append(message.id)
        head, head_size = self._head_of(request)
        whole = head.copy()
        whole.update(view.digest())
        return whole.hexdigest(), self._size + head_size

    def _head_of(self, request: ProviderRequest) -> tuple[Any, int]:
        """The hash state after the system prompt, tools and purpose, made again only when
        one of them changed (the loop hands the same objects while nothing did)."""
        system, tools, purpose = request.system, request.tools, request.purpose
        cached = self._head
        if cached is not None:
            (old_system, old_tools, old_purpose), state, size = cached
            if (
                (old_system is system or old_system == system)
                and (old_tools is tools or old_tools == tools)
                and old_purpose == purpose
            ):
                return state, size
        encoded = codec.encode((system, tools, purpose))
        state = hashlib.sha256(encoded)
        self._head = ((system, tools, purpose), state, len(encoded))
        return state, len(encoded)
