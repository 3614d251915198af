"""The three adapters end to end over real HTTP on loopback: content, faults, cancel."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Iterator

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import StatusUpdate, Usage
from codecoder.kernel.ports import (
    ProviderError,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCallDone,
)
from codecoder.providers import anthropic, openai_responses
from codecoder.providers.client import WireClient
from codecoder.providers.http import HttpClient, RetryPolicy
from codecoder.providers.pricing import Price
from codecoder.providers.registry import wire_format
from codecoder.providers.wire import WireName
from tests.fakes.raw_server import Peer, Server
from tests.fakes.wire_server import Call, Raw, Reply, Silent, Status, Text, Think, Use, WireServer
from tests.providers.conftest import OPENING, WIRES, MakeClient, simple_request

CANCEL_BOUND = 1.0  # the target is 100 ms; tests assert at 10x so they never flake


def collect(client: WireClient, cancel: CancelToken | None = None) -> list[StreamEvent]:
    return list(client.stream(simple_request(tools=True), cancel or CancelToken()))


def text_of(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


@pytest.mark.parametrize("wire", WIRES)
def test_text_reasoning_and_several_tool_calls(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(
        Reply(
            (
                Think("Plan: read, then test.", chunk=1, signature="SIG==", encrypted="ENC=="),
                Text("Reading the file.", chunk=1),
                Call("read_file", '{"path": "a.py"}', id="call_x", chunk=1),
                Call("run_command", '{"command": "ls -la"}', id="call_y", chunk=1),
                Use(input=500, output=60, cached=300, reasoning=20),
            )
        )
    )
    events = collect(make_client(wire))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == "Plan: read, then test."
    assert text_of(events) == "Reading the file."
    assert [e for e in events if isinstance(e, ToolCallDone)] == [
        ToolCallDone(id="call_x", name="read_file", raw_args='{"path": "a.py"}'),
        ToolCallDone(id="call_y", name="run_command", raw_args='{"command": "ls -la"}'),
    ]
    usage = next(e for e in events if isinstance(e, Usage))
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (500, 60, 300)
    assert usage.reasoning_tokens == (0 if wire == "anthropic" else 20)
    assert events[-1] == Stop("tool_use")
    (done,) = [e for e in events if isinstance(e, ReasoningDone)]
    assert (
        _proof(wire, done.token) == {"chat": None, "responses": "ENC==", "anthropic": "SIG=="}[wire]
    )


def _proof(wire: str, token: str | None) -> str | None:
    if wire == "anthropic":
        decoded = anthropic.decode_token(token)
        return decoded.signature if decoded else None
    if wire == "responses":
        item = openai_responses.decode_token(token)
        return item.encrypted_content if item else None
    return token


@pytest.mark.parametrize("wire", WIRES)
def test_requests_carry_the_wire_headers(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Reply((Text("ok"),)))
    collect(make_client(wire))
    (request,) = server.posts
    assert (
        request.path
        == {
            "chat": "/v1/chat/completions",
            "responses": "/v1/responses",
            "anthropic": "/v1/messages",
        }[wire]
    )
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "text/event-stream"
    if wire == "anthropic":
        assert request.headers["x-api-key"] == "sk-test"
        assert request.headers["anthropic-version"] == anthropic.API_VERSION
    else:
        assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json["stream"] is True


@pytest.mark.parametrize(
    ("wire", "stop", "expected"),
    [
        ("chat", "length", "max_tokens"),
        ("responses", "max_output_tokens", "max_tokens"),
        ("anthropic", "max_tokens", "max_tokens"),
        ("chat", "stop", "end_turn"),
    ],
)
def test_stop_reasons_are_normalised(
    wire: WireName, stop: str, expected: str, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Reply((Text("cut"),), stop=stop))
    assert collect(make_client(wire))[-1] == Stop(expected)


def test_usage_is_priced_when_the_price_is_known(
    server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Reply((Text("hi"), Use(input=2_000_000, output=1_000_000, cached=1_000_000))))
    client = make_client("chat")
    client.price = Price(input=2.0, output=10.0, cached=0.5)
    usage = next(e for e in collect(client) if isinstance(e, Usage))
    assert usage.cost == pytest.approx(2.0 + 0.5 + 10.0)


# --- retries -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "fault", "wait"),
    [
        ("chat", Status(429, '{"error": {"message": "slow down"}}', (("Retry-After", "1"),)), 1.0),
        ("responses", Status(429, "{}", (("retry-after-ms", "150"),)), 0.15),
        ("anthropic", Status(529, '{"type": "error", "error": {"type": "overloaded_error"}}'), 0.0),
    ],
)
def test_rate_limits_are_retried_after_the_servers_wait(
    wire: WireName, fault: Status, wait: float, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(fault, Reply((Text("after the wait"),)))
    started = time.monotonic()
    events = collect(make_client(wire))
    elapsed = time.monotonic() - started
    assert text_of(events) == "after the wait"
    (status,) = [e for e in events if isinstance(e, StatusUpdate)]
    assert status.status == "retrying" and f"HTTP {fault.code}" in status.detail
    if wait:
        assert status.detail.startswith(f"in {wait:.1f} s (attempt 2 of 4): fake-{wire}: ")
    assert elapsed >= wait * 0.9
    assert len(server.posts) == 2


@pytest.mark.parametrize("wire", WIRES)
def test_server_errors_are_retried_then_succeed(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    html = Status(502, "<html><body>Bad Gateway</body></html>", content_type="text/html")
    server.enqueue(Status(500, '{"error": "boom"}'), html, Reply((Text("third time"),)))
    events = collect(make_client(wire))
    assert text_of(events) == "third time"
    statuses = [e.detail for e in events if isinstance(e, StatusUpdate)]
    assert len(statuses) == 2 and "HTTP 502): <html><body>Bad Gateway" in statuses[1]


def test_retries_stop_at_the_attempt_limit(server: WireServer, make_client: MakeClient) -> None:
    server.enqueue(*[Status(503, "busy")] * 3)
    client = make_client("chat", retry=RetryPolicy(max_attempts=3, base_delay=0.01))
    with pytest.raises(ProviderError) as caught:
        collect(client)
    assert caught.value.kind == "overloaded"
    assert caught.value.message == (
        "fake-chat: server overloaded (HTTP 503): busy (gave up after 3 tries)"
    )
    assert len(server.posts) == 3


def test_retries_stop_when_the_total_wait_would_pass_the_cap(
    server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Status(429, "{}", (("Retry-After", "3"),)), Reply((Text("never"),)))
    client = make_client("chat", retry=RetryPolicy(max_total=2.0))
    with pytest.raises(ProviderError) as caught:
        collect(client)
    assert caught.value.kind == "rate_limit" and len(server.posts) == 1


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (Status(401, '{"error": {"message": "Incorrect API key"}}'), "auth"),
        (
            Status(400, '{"error": {"code": "context_length_exceeded", "message": "x"}}'),
            "context_length",
        ),
        (Status(429, '{"error": {"code": "insufficient_quota", "message": "x"}}'), "rate_limit"),
        (
            Raw(b'{"id": "chatcmpl-1", "choices": []}', content_type="application/json"),
            "bad_response",
        ),
        (Raw(b"data: this is not json\n\n"), "bad_response"),
    ],
)
def test_permanent_failures_are_not_retried(
    fault: Status | Raw, kind: str, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(fault, Reply((Text("unreached"),)))
    with pytest.raises(ProviderError) as caught:
        collect(make_client("chat"))
    assert caught.value.kind == kind and not caught.value.retryable
    assert caught.value.message.startswith("fake-chat: ") and "\n" not in caught.value.message
    assert len(server.posts) == 1


@pytest.mark.parametrize(
    ("wire", "event", "kind"),
    [
        (
            "anthropic",
            b'event: error\ndata: {"type": "error", "error": '
            b'{"type": "overloaded_error", "message": "Overloaded"}}\n\n',
            None,
        ),
        (
            "chat",
            b'data: {"error": {"message": "upstream failed", "type": "server_error"}}\n\n',
            None,
        ),
        (
            "responses",
            b'event: response.failed\ndata: {"type": "response.failed", "response": '
            b'{"status": "failed", "error": {"code": "context_length_exceeded", '
            b'"message": "too long"}}}\n\n',
            "context_length",
        ),
    ],
)
def test_errors_inside_the_stream(
    wire: WireName, event: bytes, kind: str | None, server: WireServer, make_client: MakeClient
) -> None:
    """A transient error event before any content is retried; a final one is raised."""
    server.enqueue(Reply((Text("x"),), prefix=(event,)), Reply((Text("recovered"),)))
    if kind is None:
        assert text_of(collect(make_client(wire))) == "recovered"
        assert len(server.posts) == 2
        return
    with pytest.raises(ProviderError) as caught:
        collect(make_client(wire))
    assert caught.value.kind == kind


def test_json_of_a_shape_the_wire_never_sends_is_a_bad_response(
    server: WireServer, make_client: MakeClient
) -> None:
    event = b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": 5}\n\n'
    server.enqueue(Raw(event))
    with pytest.raises(ProviderError) as caught:
        collect(make_client("anthropic"))
    assert caught.value.kind == "bad_response"
    assert "unexpected event content_block_delta" in caught.value.message
    chain: list[BaseException] = []
    cause: BaseException | None = caught.value
    while cause is not None:
        chain.append(cause)
        cause = cause.__cause__
    assert isinstance(chain[-1], AttributeError)  # the chain keeps the detail for --trace


# --- cut streams ---------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_a_stream_cut_after_content_is_not_retried(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(
        Reply((Text("partial answer", chunk=1),), drop_after=OPENING[wire] + 6),
        Reply((Text("a retry would be wrong"),)),
    )
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        events.extend(make_client(wire).stream(simple_request(), CancelToken()))
    assert caught.value.kind == "network" and not caught.value.retryable
    assert "cut off mid-stream" in caught.value.message
    assert text_of(events) == "partial answer"[: len(text_of(events))] != ""
    assert len(server.posts) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_a_stream_cut_before_any_content_is_retried(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Reply((Text("lost"),), drop_after=OPENING[wire]), Reply((Text("whole answer"),)))
    events = collect(make_client(wire))
    assert text_of(events) == "whole answer"
    assert any(isinstance(e, StatusUpdate) for e in events)
    assert len(server.posts) == 2


def test_a_body_that_ends_without_the_final_event_is_incomplete(
    server: WireServer, make_client: MakeClient
) -> None:
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "half"}}]}\n\n'
    server.enqueue(Raw(chunk))
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        events.extend(make_client("chat").stream(simple_request(), CancelToken()))
    assert text_of(events) == "half"
    assert caught.value.kind == "network" and "ended before the reply was complete" in str(
        caught.value
    )


# --- cancel --------------------------------------------------------------------------


class Consumer:
    """Reads a stream on its own thread (as the kernel does) and notes when it ended."""

    def __init__(self, events: Iterator[StreamEvent]) -> None:
        self.events: list[StreamEvent] = []
        self.error: BaseException | None = None
        self.ended_at = 0.0
        self._iterator = events
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._iterator:
                self.events.append(event)
        except BaseException as exc:
            self.error = exc
        self.ended_at = time.monotonic()

    def join(self) -> None:
        self._thread.join(10)
        assert not self._thread.is_alive()


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_ends_a_silent_stream_at_once(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Reply((Text("then silence", chunk=1),), hang_after=OPENING[wire] + 4))
    cancel = CancelToken()
    consumer = Consumer(make_client(wire).stream(simple_request(), cancel))
    assert server.wait_stalled()
    time.sleep(0.05)  # let the reader block in recv()
    cancelled_at = time.monotonic()
    cancel.cancel()
    consumer.join()
    assert consumer.error is None
    assert consumer.ended_at - cancelled_at < CANCEL_BOUND
    assert text_of(consumer.events) != ""


def test_cancel_while_waiting_for_the_response_head(
    server: WireServer, make_client: MakeClient
) -> None:
    """On a kept-alive connection too: the socket is found through the transport."""
    client = make_client("chat")
    server.enqueue(Reply((Text("first"),)), Silent())
    assert text_of(collect(client)) == "first"
    cancel = CancelToken()
    consumer = Consumer(client.stream(simple_request(), cancel))
    assert server.wait_stalled()
    time.sleep(0.05)
    cancelled_at = time.monotonic()
    cancel.cancel()
    consumer.join()
    assert consumer.error is None and consumer.events == []
    assert consumer.ended_at - cancelled_at < CANCEL_BOUND


def test_cancel_stops_a_retry_wait(server: WireServer, make_client: MakeClient) -> None:
    server.enqueue(Status(429, "{}", (("Retry-After", "20"),)), Reply((Text("too late"),)))
    cancel = CancelToken()
    consumer = Consumer(make_client("anthropic").stream(simple_request(), cancel))
    deadline = time.monotonic() + 5
    while not consumer.events and time.monotonic() < deadline:
        time.sleep(0.01)
    assert isinstance(consumer.events[0], StatusUpdate)
    cancelled_at = time.monotonic()
    cancel.cancel()
    consumer.join()
    assert consumer.ended_at - cancelled_at < CANCEL_BOUND
    assert consumer.error is None and len(server.posts) == 1


def test_a_cancelled_token_sends_nothing(server: WireServer, make_client: MakeClient) -> None:
    cancel = CancelToken()
    cancel.cancel()
    assert collect(make_client("responses"), cancel) == []
    assert server.posts == []


# --- environment proxies -------------------------------------------------------------


def test_an_environment_proxy_is_used(
    server: WireServer, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY applies as the SDKs apply it; cancel still wakes a silent stream."""
    monkeypatch.setenv("HTTP_PROXY", server.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = make_client("chat")
    client.http.base_url = "http://upstream.invalid/v1"
    server.enqueue(Reply((Text("via the proxy"),)), Reply((Text("x", chunk=1),), hang_after=2))
    assert text_of(collect(client)) == "via the proxy"
    assert server.posts[0].target == "http://upstream.invalid/v1/chat/completions"
    cancel = CancelToken()
    consumer = Consumer(client.stream(simple_request(), cancel))
    assert server.wait_stalled()
    time.sleep(0.05)
    cancelled_at = time.monotonic()
    cancel.cancel()
    consumer.join()
    assert consumer.ended_at - cancelled_at < CANCEL_BOUND


def test_no_proxy_bypasses_the_proxy(
    server: WireServer, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.enqueue(Reply((Text("direct"),)))
    assert text_of(collect(make_client("chat"))) == "direct"
    assert not server.posts[0].target.startswith("http")


def test_a_key_that_cannot_go_in_a_header_is_a_config_error(
    server: WireServer, make_client: MakeClient
) -> None:
    client = make_client("chat")
    client.headers["Authorization"] = "Bearer sk-…"  # pasted with a typographic ellipsis
    with pytest.raises(ProviderError) as caught:
        list(client.stream(simple_request(), CancelToken()))
    assert caught.value.kind == "config"
    assert server.posts == []


def test_a_cancel_after_its_stream_ended_leaves_the_next_stream_alone() -> None:
    """Stream A's last event comes from the parser after the body ended, so A's connection
    is back in the pool while A's consumer still holds the generator. Cancelling A then
    must not shut down that connection under stream B (another thread, another token)."""
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    def sse(text: str) -> bytes:  # no `data: [DONE]`: Stop comes from parser.finish()
        events = [
            {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        data = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
        return b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)

    def handle(peer: Peer) -> None:
        if peer.request() is not None:
            peer.send(head + sse("A"))
        if peer.request() is not None:
            peer.send(head)
            time.sleep(0.4)
            peer.send(sse("B"))

    with Server(handle) as server:
        http = HttpClient(server.url, retry=RetryPolicy(max_attempts=1))
        chat = wire_format("chat")

        def stream(token: CancelToken) -> Generator[StreamEvent, None, None]:
            return http.stream(
                "/chat", b"{}", headers={}, cancel=token, new_parser=chat.new_parser, label="t"
            )

        first = CancelToken()
        a = stream(first)
        assert any(isinstance(event, Stop) for event in a)  # A's generator is not finished
        b = Consumer(stream(CancelToken()))
        time.sleep(0.2)
        first.cancel()
        b.join()
        a.close()
        http.close()
    assert b.error is None
    assert text_of(b.events) == "B"
    assert server.accepted == 1
