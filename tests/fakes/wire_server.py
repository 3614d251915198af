"""A real HTTP server on 127.0.0.1 that speaks the three streaming wire formats, driven by
per-test scripts.

Routes: `POST /v1/chat/completions` (OpenAI Chat Completions), `POST /v1/responses`
(OpenAI Responses), `POST /v1/messages` (Anthropic Messages), `GET /v1/models`. Each POST
takes the next scripted reply; a reply is written the way the public API references
define the stream (the official SDKs' own stream parsers are pointed at this server in
tests/providers/test_sdk_reference.py, so the fakes cannot drift from the protocols). A
request line with an absolute URL is served as if it had reached its host, so the server
doubles as an HTTP proxy.

A script is wire-neutral: `Reply(parts=(Think(...), Text(...), Call(...), Use(...)))` is
rendered into whichever wire the request came in on. Faults: `Status` (any HTTP answer,
e.g. 429 with Retry-After), `Raw` (any body), `Silent` (reads the request, never
answers), and on a Reply `hang_after` (stop sending, keep the connection open) or
`drop_after` (close the connection mid-body).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import urlsplit

# --- the script vocabulary ----------------------------------------------------------


@dataclass(frozen=True)
class Text:
    text: str
    chunk: int = 0
    """Characters per delta; 0 sends the text as one delta."""


@dataclass(frozen=True)
class Think:
    text: str
    signature: str = "sig-abc"
    encrypted: str = "enc-abc"
    chunk: int = 0
    redacted: bool = False
    """Anthropic only: a redacted_thinking block whose data is `encrypted`."""


@dataclass(frozen=True)
class Call:
    name: str
    args: str
    id: str = ""
    chunk: int = 0
    pieces: tuple[str, ...] = ()
    """The argument deltas exactly as given (`args` then only fills the Responses wire's
    `done` events): lets one delta be a filler that `Reply.repeat` floods."""


@dataclass(frozen=True)
class Use:
    input: int = 0
    """All input tokens, cached ones included."""
    output: int = 0
    cached: int = 0
    reasoning: int = 0


Part = Text | Think | Call | Use


@dataclass(frozen=True)
class Reply:
    parts: tuple[Part, ...]
    stop: str | None = None
    """The wire's own stop reason; derived from the parts when None."""
    hang_after: int | None = None
    drop_after: int | None = None
    delay: float = 0.0
    """Seconds between events (each event then goes out in its own write)."""
    prefix: tuple[bytes, ...] = ()
    """Raw SSE events sent first (after the wire's opening events)."""
    repeat: tuple[str, int] | None = None
    """(needle, times): every event holding `needle` goes out `times` times, so a reply of
    hundreds of MB streams from a few KB of script (the server never holds it whole). A
    client hanging up mid-flood is expected: the server then stops quietly."""


@dataclass(frozen=True)
class Status:
    code: int
    body: bytes | str = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"


@dataclass(frozen=True)
class Raw:
    body: bytes
    content_type: str = "text/event-stream"
    status: int = 200


@dataclass(frozen=True)
class Silent:
    """Read the request and never answer (until the server closes)."""


Script = Reply | Status | Raw | Silent


def text_reply(text: str, *, chunk: int = 0, usage: Use | None = None) -> Reply:
    parts: tuple[Part, ...] = (Text(text, chunk=chunk),)
    return Reply(parts + ((usage,) if usage else ()))


# --- recorded traffic ----------------------------------------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    target: str
    """The request line's target: absolute (`http://host/…`) when sent to us as a proxy."""
    received: float = 0.0
    """time.monotonic() when the request line arrived (one clock across processes)."""

    @property
    def json(self) -> Any:
        return json.loads(self.body)


# --- rendering -----------------------------------------------------------------------


def _pieces(text: str, size: int) -> list[str]:
    if size <= 0 or not text:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    payload = json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _call_ids(parts: tuple[Part, ...]) -> list[str]:
    calls = [part for part in parts if isinstance(part, Call)]
    return [call.id or f"call_{n}" for n, call in enumerate(calls)]


def render_chat(reply: Reply, model: str) -> list[bytes]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000}
    base["model"] = model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    out = [chunk({"role": "assistant", "content": ""})]
    out.extend(reply.prefix)
    ids = iter(_call_ids(reply.parts))
    index = 0
    usage: Use | None = None
    for part in reply.parts:
        if isinstance(part, Think):
            out += [chunk({"reasoning_content": p}) for p in _pieces(part.text, part.chunk)]
        elif isinstance(part, Text):
            out += [chunk({"content": p}) for p in _pieces(part.text, part.chunk)]
        elif isinstance(part, Call):
            start = {"index": index, "id": next(ids), "type": "function"}
            start["function"] = {"name": part.name, "arguments": ""}
            out.append(chunk({"tool_calls": [start]}))
            for p in part.pieces or _pieces(part.args, part.chunk):
                piece = {"index": index, "function": {"arguments": p}}
                out.append(chunk({"tool_calls": [piece]}))
            index += 1
        else:
            usage = part
    finish = reply.stop or ("tool_calls" if index else "stop")
    out.append(chunk({}, finish))
    if usage is not None:
        out.append(_sse({**base, "choices": [], "usage": _chat_usage(usage)}))
    out.append(b"data: [DONE]\n\n")
    return out


def _chat_usage(use: Use) -> dict[str, Any]:
    return {
        "prompt_tokens": use.input,
        "completion_tokens": use.output,
        "total_tokens": use.input + use.output,
        "prompt_tokens_details": {"cached_tokens": use.cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": use.reasoning, "audio_tokens": 0},
    }


class _ResponsesStream:
    """Renders one Responses stream; sequence numbers and output indexes in order."""

    def __init__(self, model: str) -> None:
        self.events: list[bytes] = []
        self.output: list[dict[str, Any]] = []
        self.sequence = 0
        self.response: dict[str, Any] = {
            "id": "resp_fake",
            "object": "response",
            "created_at": 1700000000,
            "status": "in_progress",
            "model": model,
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "usage": None,
        }

    def emit(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        self.events.append(_sse(data, event=kind))

    def item(
        self, item: dict[str, Any], body: list[tuple[str, dict[str, Any]]], done: dict[str, Any]
    ) -> None:
        index = len(self.output)
        self.emit("response.output_item.added", output_index=index, item=item)
        for kind, fields in body:
            self.emit(kind, item_id=item["id"], output_index=index, **fields)
        self.emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    def reasoning(self, part: Think) -> None:
        item_id = f"rs_{len(self.output)}"
        summary = {"type": "summary_text", "text": part.text}
        body = [
            (
                "response.reasoning_summary_part.added",
                {"summary_index": 0, "part": {**summary, "text": ""}},
            )
        ]
        body += [
            ("response.reasoning_summary_text.delta", {"summary_index": 0, "delta": p})
            for p in _pieces(part.text, part.chunk)
        ]
        body += [
            ("response.reasoning_summary_text.done", {"summary_index": 0, "text": part.text}),
            ("response.reasoning_summary_part.done", {"summary_index": 0, "part": summary}),
        ]
        start = {"id": item_id, "type": "reasoning", "summary": []}
        done = {**start, "summary": [summary], "encrypted_content": part.encrypted}
        self.item(start, body, done)

    def message(self, part: Text) -> None:
        item_id = f"msg_{len(self.output)}"
        content = {"type": "output_text", "text": part.text, "annotations": [], "logprobs": []}
        where = {"content_index": 0}
        body = [("response.content_part.added", {**where, "part": {**content, "text": ""}})]
        body += [
            ("response.output_text.delta", {**where, "delta": p, "logprobs": []})
            for p in _pieces(part.text, part.chunk)
        ]
        body += [
            ("response.output_text.done", {**where, "text": part.text, "logprobs": []}),
            ("response.content_part.done", {**where, "part": content}),
        ]
        start = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
        self.item(
            {**start, "content": []}, body, {**start, "status": "completed", "content": [content]}
        )

    def call(self, part: Call, call_id: str) -> None:
        item_id = f"fc_{len(self.output)}"
        start = {"id": item_id, "type": "function_call", "status": "in_progress"}
        start |= {"call_id": call_id, "name": part.name, "arguments": ""}
        body = [
            ("response.function_call_arguments.delta", {"delta": p})
            for p in part.pieces or _pieces(part.args, part.chunk)
        ]
        body.append(("response.function_call_arguments.done", {"arguments": part.args}))
        self.item(start, body, {**start, "status": "completed", "arguments": part.args})


def render_responses(reply: Reply, model: str) -> list[bytes]:
    stream = _ResponsesStream(model)
    stream.emit("response.created", response=dict(stream.response))
    stream.emit("response.in_progress", response=dict(stream.response))
    stream.events.extend(reply.prefix)
    ids = iter(_call_ids(reply.parts))
    usage: Use | None = None
    for part in reply.parts:
        if isinstance(part, Think):
            stream.reasoning(part)
        elif isinstance(part, Text):
            stream.message(part)
        elif isinstance(part, Call):
            stream.call(part, next(ids))
        else:
            usage = part
    final = {**stream.response, "output": stream.output}
    final["status"] = "incomplete" if reply.stop == "max_output_tokens" else "completed"
    if reply.stop == "max_output_tokens":
        final["incomplete_details"] = {"reason": "max_output_tokens"}
    if usage is not None:
        final["usage"] = {
            "input_tokens": usage.input,
            "input_tokens_details": {"cached_tokens": usage.cached},
            "output_tokens": usage.output,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning},
            "total_tokens": usage.input + usage.output,
        }
    stream.emit(f"response.{final['status']}", response=final)
    return stream.events


def render_anthropic(reply: Reply, model: str) -> list[bytes]:
    usage = next((part for part in reply.parts if isinstance(part, Use)), Use())
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input - usage.cached,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached,
            "output_tokens": 1,
        },
    }
    out = [_sse({"type": "message_start", "message": message}, "message_start")]
    out.append(_sse({"type": "ping"}, "ping"))
    out.extend(reply.prefix)
    ids = iter(_call_ids(reply.parts))
    blocks = [part for part in reply.parts if not isinstance(part, Use)]
    for index, part in enumerate(blocks):
        out += _anthropic_block(index, part, ids)
    stop = reply.stop or ("tool_use" if any(isinstance(p, Call) for p in blocks) else "end_turn")
    delta = {"stop_reason": stop, "stop_sequence": None}
    out.append(
        _sse(
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage.output}},
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def _anthropic_block(index: int, part: Part, ids: Iterator[str]) -> list[bytes]:
    def event(kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, "index": index, **fields}, kind)

    def delta(**fields: Any) -> bytes:
        return event("content_block_delta", delta=fields)

    out: list[bytes] = []
    if isinstance(part, Think) and part.redacted:
        block = {"type": "redacted_thinking", "data": part.encrypted}
        out.append(event("content_block_start", content_block=block))
    elif isinstance(part, Think):
        block = {"type": "thinking", "thinking": "", "signature": ""}
        out.append(event("content_block_start", content_block=block))
        out += [delta(type="thinking_delta", thinking=p) for p in _pieces(part.text, part.chunk)]
        out.append(delta(type="signature_delta", signature=part.signature))
    elif isinstance(part, Text):
        out.append(event("content_block_start", content_block={"type": "text", "text": ""}))
        out += [delta(type="text_delta", text=p) for p in _pieces(part.text, part.chunk)]
    elif isinstance(part, Call):
        block = {"type": "tool_use", "id": next(ids), "name": part.name, "input": {}}
        out.append(event("content_block_start", content_block=block))
        out += [
            delta(type="input_json_delta", partial_json=p)
            for p in part.pieces or _pieces(part.args, part.chunk)
        ]
    out.append(event("content_block_stop"))
    return out


RENDERERS = {
    "/v1/chat/completions": render_chat,
    "/v1/responses": render_responses,
    "/v1/messages": render_anthropic,
}


# --- the server ----------------------------------------------------------------------


@dataclass
class _State:
    script: deque[Script] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    stalled: threading.Event = field(default_factory=threading.Event)
    """Set when a reply has stopped sending (hang_after / Silent)."""
    connections: set[socket.socket] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Like production API servers: without TCP_NODELAY, the body written after the head
    # waits for the client's delayed ACK (40 ms on Linux) on every request.
    disable_nagle_algorithm = True

    @property
    def state(self) -> _State:
        return cast(_Server, self.server).state

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        with self.state.lock:
            self.state.connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.state.lock:
            self.state.connections.discard(self.connection)

    def _record(self) -> Recorded:
        received = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        path = urlsplit(self.path).path
        recorded = Recorded(self.command, path, headers, body, self.path, received)
        with self.state.lock:
            self.state.requests.append(recorded)
        return recorded

    def do_GET(self) -> None:
        if self._record().path.rstrip("/") != "/v1/models":
            self._answer(Status(404, b'{"error": {"message": "no such route"}}'))
            return
        models = {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0}]}
        self._answer(Status(200, json.dumps(models)))

    def do_POST(self) -> None:
        recorded = self._record()
        render = RENDERERS.get(recorded.path)
        state = self.state
        with state.lock:
            step = state.script.popleft() if state.script else None
        if render is None or step is None:
            message = "no such route" if render is None else "script exhausted"
            self._answer(Status(500, json.dumps({"error": {"message": message}})))
            return
        if isinstance(step, Reply):
            model = str(recorded.json.get("model", "fake-model"))
            self._stream(step, render(step, model))
        elif isinstance(step, Silent):
            state.stalled.set()
            state.release.wait(30)
            self.close_connection = True
        elif isinstance(step, Raw):
            self._answer(Status(step.status, step.body, content_type=step.content_type))
        else:
            self._answer(step)

    def _answer(self, status: Status) -> None:
        body = status.body.encode() if isinstance(status.body, str) else status.body
        self.send_response(status.code)
        self.send_header("Content-Type", status.content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in status.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, reply: Reply, events: list[bytes]) -> None:
        if reply.repeat is not None:
            self._flood(events, *reply.repeat)
            return
        cut = reply.hang_after if reply.hang_after is not None else reply.drop_after
        whole = cut is None and not reply.delay
        # Each event is its own HTTP chunk, as real servers flush them; an instant reply
        # goes out in one write, framed before the head so the stream itself is instant.
        payload = b"".join(_chunk(event) for event in events) + b"0\r\n\r\n" if whole else b""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if whole:
            self.wfile.write(payload)
            return
        for event in events[:cut]:
            self.wfile.write(_chunk(event))
            if reply.delay:
                time.sleep(reply.delay)
        if reply.hang_after is not None:
            self.state.stalled.set()
            self.state.release.wait(30)
        if cut is not None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")

    def _flood(self, events: list[bytes], needle: str, times: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        mark = needle.encode()
        try:
            for event in events:
                framed = _chunk(event)
                for _ in range(times if mark in event else 1):
                    self.wfile.write(framed)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client hung up (as it should, at its cap)
            self.close_connection = True


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, state: _State) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), _Handler)


class WireServer:
    """`with WireServer() as server:` … `server.url` is `http://127.0.0.1:PORT`; the
    OpenAI base URL is `server.url + "/v1"`, the Anthropic one `server.url`."""

    def __init__(self) -> None:
        self._state = _State()
        self._server = _Server(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=False
        )
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def enqueue(self, *steps: Script) -> None:
        with self._state.lock:
            self._state.script.extend(steps)

    @property
    def requests(self) -> list[Recorded]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def posts(self) -> list[Recorded]:
        return [request for request in self.requests if request.method == "POST"]

    @property
    def remaining(self) -> int:
        with self._state.lock:
            return len(self._state.script)

    def wait_stalled(self, timeout: float = 5.0) -> bool:
        """Block until a reply has stopped sending (hang_after or Silent)."""
        return self._state.stalled.wait(timeout)

    def close(self) -> None:
        self._state.release.set()
        if self._thread.is_alive():
            self._server.shutdown()
        with self._state.lock:
            connections = list(self._state.connections)
        for connection in connections:  # wake handlers parked on idle keep-alive sockets
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()
