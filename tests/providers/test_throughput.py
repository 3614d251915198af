"""A 20,000-token answer in one-token SSE events (each its own HTTP chunk, as servers
flush them) is consumed fast and reaches the kernel as a few coalesced events."""

from __future__ import annotations

import time

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import TextDelta
from codecoder.providers.wire import WireName
from tests.fakes.wire_server import Reply, Text, Use, WireServer
from tests.providers.conftest import WIRES, MakeClient, simple_request

TOKENS = 20_000
BOUND = 4.5  # 10x the whole headless run's target (issue 3: 0.45 s first token to exit)


@pytest.mark.parametrize("wire", WIRES)
def test_twenty_thousand_one_token_chunks(
    wire: WireName, server: WireServer, make_client: MakeClient
) -> None:
    server.enqueue(Reply((Text("x" * TOKENS, chunk=1), Use(input=10, output=TOKENS))))
    first = 0.0
    chars = 0
    count = 0
    for event in make_client(wire).stream(simple_request(), CancelToken()):
        count += 1
        if isinstance(event, TextDelta):
            first = first or time.perf_counter()
            chars += len(event.text)
    elapsed = time.perf_counter() - first
    assert chars == TOKENS
    assert elapsed < BOUND, f"{elapsed:.3f} s"
    assert count < TOKENS // 10  # coalesced: one event per network read, not per token
