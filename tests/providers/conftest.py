"""Fixtures for the provider tests: a fake wire server and clients pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from codecoder.kernel.messages import user_message
from codecoder.kernel.ports import ProviderRequest, ToolSpec
from codecoder.providers.client import WireClient
from codecoder.providers.http import HttpClient, RetryPolicy
from codecoder.providers.registry import wire_format
from codecoder.providers.wire import WireName
from tests.fakes.wire_server import WireServer

WIRES: tuple[WireName, ...] = ("chat", "responses", "anthropic")
OPENING: dict[WireName, int] = {"chat": 1, "responses": 2, "anthropic": 2}
"""Events a wire sends before anything a client is shown (for "nothing delivered yet")."""
FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=2.0, max_total=5.0)

MakeClient = Callable[..., WireClient]


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as fake:
        yield fake


@pytest.fixture
def make_client(server: WireServer) -> Iterator[MakeClient]:
    """`make_client(wire, **options)`: a WireClient for `wire` aimed at the fake server."""
    clients: list[WireClient] = []

    def make(wire: WireName, retry: RetryPolicy = FAST_RETRY, **options: object) -> WireClient:
        base = server.url if wire == "anthropic" else server.url + "/v1"
        client = WireClient(
            provider=f"fake-{wire}",
            model="fake-model",
            wire=wire_format(wire),
            http=HttpClient(base, retry=retry),
            api_key="sk-test",
            options=options,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def simple_request(text: str = "hello", *, tools: bool = False) -> ProviderRequest:
    specs = (
        (
            ToolSpec(
                name="read_file",
                description="Read a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}},
            ),
        )
        if tools
        else ()
    )
    return ProviderRequest(system="You are terse.", messages=(user_message(text, 1),), tools=specs)
