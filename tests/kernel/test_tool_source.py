"""Tools that arrive during a session (kernel.ports.ToolSource): offered from the next
request on, callable only once offered, never shadowing a fixed tool; their source's
notices are shown before a request and before the turn's Done."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Done, StatusUpdate, ToolFinished
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import ProviderRequest, Risk, StreamEvent, Tool, ToolContext
from codecoder.providers.scripted import ScriptedProvider
from tests.invariants import check_history, check_turn
from tests.kernel.helpers import Echo


class Late:
    """A tool of a source (as an MCP server's is)."""

    description = "arrived late"
    risk: Risk = "read"
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, name: str) -> None:
        self.name = name

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        return args

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return tool_result(ctx.call_id, f"{self.name} ran")


class Source:
    """Offers nothing until `arrive`, then the given tools (a new tuple each change)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tools: tuple[Tool, ...] = ()
        self._notices: list[StatusUpdate] = []
        self.asked = 0

    def arrive(self, *tools: Tool, notice: str | None = None) -> None:
        with self._lock:
            self._tools = (*self._tools, *tools)
            if notice is not None:
                self._notices.append(StatusUpdate("idle", notice, "mcp"))

    def tools(self) -> Sequence[Tool]:
        with self._lock:
            self.asked += 1
            return self._tools

    def notices(self) -> Sequence[StatusUpdate]:
        with self._lock:
            taken, self._notices = self._notices, []
            return taken


class Recording(ScriptedProvider):
    """The scripted provider, keeping each request's tool names; `on_request` runs
    before the reply is played (a server finishing its start-up meanwhile)."""

    def __init__(self, replies: list[Any], on_request: Any = None) -> None:
        super().__init__(ScriptedProvider.from_replies(replies).script)
        self.offered: list[list[str]] = []
        self.on_request = on_request

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        self.offered.append([spec.name for spec in request.tools])
        if self.on_request is not None:
            self.on_request(len(self.offered))
        yield from super().stream(request, cancel)


def call(name: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": {}}


def run(loop: AgentLoop) -> list[Any]:
    handle = loop.start()
    try:
        handle.send("go")
        return handle.wait_done(10)
    finally:
        handle.shutdown()


def test_a_tool_is_offered_from_the_request_after_it_arrives(tmp_path: Path) -> None:
    source = Source()

    def server_ready(request: int) -> None:
        if request == 1:  # it arrives while the model writes its first reply
            source.arrive(Late("mcp__s__late"))

    provider = Recording(
        [[call("mcp__s__late"), call("echo_missing")], [call("mcp__s__late")], ["done"]],
        on_request=server_ready,
    )
    loop = AgentLoop(provider, [Echo()], tmp_path, tool_source=source)
    events = run(loop)
    check_turn(events)
    check_history(loop.messages)
    assert provider.offered == [["echo"], ["echo", "mcp__s__late"], ["echo", "mcp__s__late"]]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    # the first reply called it before its request offered it: an unknown tool then
    assert finished[0].error is not None and finished[0].error.kind == "unknown_tool"
    assert finished[2].result is not None and finished[2].result.text == "mcp__s__late ran"


def test_a_fixed_tool_keeps_its_name(tmp_path: Path) -> None:
    source = Source()
    source.arrive(Late("echo"), Late("other"))
    provider = Recording([[{"type": "tool_call", "name": "echo", "args": {"text": "x"}}], ["ok"]])
    loop = AgentLoop(provider, [Echo()], tmp_path, tool_source=source)
    events = run(loop)
    assert provider.offered[0] == ["echo", "other"]
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.result is not None and finished.result.text == "x"  # Echo's, not Late's


def test_notices_come_before_a_request_and_before_done(tmp_path: Path) -> None:
    source = Source()
    source.arrive(notice="mcp server a: failed to start")

    def late_notice(request: int) -> None:
        source.arrive(notice="mcp server b: failed to start")

    loop = AgentLoop(Recording([["ok"]], late_notice), [], tmp_path, tool_source=source)
    events = run(loop)
    check_turn(events)
    statuses = [(i, e.detail) for i, e in enumerate(events) if isinstance(e, StatusUpdate)]
    thinking = next(i for i, e in enumerate(events) if e == StatusUpdate("thinking"))
    first = next(i for i, detail in statuses if detail.startswith("mcp server a"))
    second = next(i for i, detail in statuses if detail.startswith("mcp server b"))
    assert first < thinking < second < len(events) - 1
    assert isinstance(events[-1], Done)
    assert [d for _, d in statuses].count("mcp server a: failed to start") == 1


class Counted(Late):
    """Counts how often its schema is read (each rebuild of the request's specs)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.reads = 0

    @property
    def parameters(self) -> dict[str, Any]:  # type: ignore[override]
        self.reads += 1
        return {"type": "object"}


def test_specs_are_rebuilt_only_when_the_source_offers_something_new(tmp_path: Path) -> None:
    source = Source()
    first = Counted("mcp__s__x")
    source.arrive(first)

    def another(request: int) -> None:
        if request == 2:
            source.arrive(Late("mcp__s__y"))

    replies = [[call("mcp__s__x")], [call("mcp__s__x")], [call("mcp__s__y")], ["done"]]
    provider = Recording(replies, another)
    run(AgentLoop(provider, [], tmp_path, tool_source=source))
    assert source.asked == 4
    assert first.reads == 2  # at the first request, and when mcp__s__y arrived
    assert provider.offered[-1] == ["mcp__s__x", "mcp__s__y"]


def test_the_source_is_asked_after_the_system_prompt(tmp_path: Path) -> None:
    """A source may start work of its own when first asked (MCP servers do): by then the
    request's costly part, the system prompt, is built."""
    order: list[str] = []

    class Prompt:
        def system_prompt(self) -> str:
            order.append("prompt")
            return "p"

    class Asked(Source):
        def tools(self) -> Sequence[Tool]:
            order.append("tools")
            return super().tools()

    run(AgentLoop(Recording([["ok"]]), [], tmp_path, prompt=Prompt(), tool_source=Asked()))
    assert order == ["prompt", "tools"]
