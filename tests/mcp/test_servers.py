"""The MCP client against real servers we did not write (tests/mcp/conftest.py): tools
listed and called, a long call cancelled on the server's side, a server killed mid-call
and restarted, stdio and streamable HTTP, and servers that are slow or broken."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.events import AgentEvent, StatusUpdate, ToolOutput
from codecoder.kernel.messages import user_message
from codecoder.kernel.ports import ProviderRequest, ToolContext
from codecoder.mcp import cache
from codecoder.mcp.config import Selection, ServerSpec
from codecoder.mcp.manager import MAX_RESTARTS, McpManager
from codecoder.mcp.tools import McpTool
from codecoder.providers.scripted import ScriptedProvider
from tests.mcp.conftest import HttpServer, Managers, spec, time_spec, wait_for
from tests.procfs import alive

pytestmark = pytest.mark.timeout(180)

CANCEL_BOUND = 0.2


def tools_of(manager: McpManager) -> dict[str, McpTool]:
    return {tool.name: tool for tool in manager.tools()}


def everything_spec(entry: Path) -> ServerSpec:
    return spec("everything", "node", str(entry), "stdio")


def test_the_time_server_lists_and_answers(managers: Managers, ctx: ToolContext) -> None:
    manager = managers(time_spec())
    (info,) = manager.statuses()
    assert info.status == "ready", info.detail
    tools = tools_of(manager)
    assert set(tools) == {"mcp__time__get_current_time", "mcp__time__convert_time"}
    now = tools["mcp__time__get_current_time"]
    assert now.risk == "execute"
    assert now.description.startswith(
        "[Tool `get_current_time` of MCP server `time`; the text below is the server's"
    )
    assert now.parameters["required"] == ["timezone"]
    result = now.run({"timezone": "Asia/Tokyo"}, ctx)
    assert result.status == "success"
    assert json.loads(result.text)["timezone"] == "Asia/Tokyo"
    failed = now.run({"timezone": "Mars/Olympus"}, ctx)
    assert failed.status == "error" and "Invalid timezone" in failed.text


def test_server_everything_over_stdio(
    managers: Managers, everything: Path, ctx: ToolContext
) -> None:
    manager = managers(everything_spec(everything))
    tools = tools_of(manager)
    assert {"mcp__everything__echo", "mcp__everything__trigger-long-running-operation"} <= set(
        tools
    )
    echo = tools["mcp__everything__echo"].run({"message": "hello"}, ctx)
    assert (echo.status, echo.text) == ("success", "Echo: hello")
    image = tools["mcp__everything__get-tiny-image"].run({}, ctx)
    assert "[image: image/png, " in image.text and "not shown" in image.text
    links = tools["mcp__everything__get-resource-links"].run({"count": 2}, ctx)
    assert links.text.count("[resource link ") == 2


def test_progress_of_a_long_call_is_live_output(
    managers: Managers, everything: Path, ctx: ToolContext, events: list[AgentEvent]
) -> None:
    manager = managers(everything_spec(everything))
    long = tools_of(manager)["mcp__everything__trigger-long-running-operation"]
    result = long.run({"duration": 0.6, "steps": 3}, ctx)
    assert result.status == "success" and "Long running operation completed" in result.text
    chunks = [e.chunk for e in events if isinstance(e, ToolOutput)]
    assert chunks == ["progress 1/3\n", "progress 2/3\n", "progress 3/3\n"]


def test_cancel_returns_at_once_and_the_server_drops_the_call(
    managers: Managers, everything: Path, ctx: ToolContext
) -> None:
    manager = managers(everything_spec(everything))
    long = tools_of(manager)["mcp__everything__trigger-long-running-operation"]
    cancelled_at: list[float] = []

    def cancel() -> None:
        cancelled_at.append(time.monotonic())
        ctx.cancel.cancel()

    threading.Timer(0.4, cancel).start()
    with pytest.raises(Cancelled):
        long.run({"duration": 2, "steps": 4}, ctx)
    assert time.monotonic() - cancelled_at[0] < CANCEL_BOUND
    (request,) = [
        json.loads(line)["id"]
        for _, _, way, line in managers.lines
        if way == "out" and b'"tools/call"' in line
    ]
    assert wait_for(lambda: _sent_cancel(managers, request), 2)
    time.sleep(2.5)  # past the operation's end: a server that had not heard would answer
    answered = [
        json.loads(line)
        for _, _, way, line in managers.lines
        if way == "in" and json.loads(line).get("id") == request
    ]
    assert answered == []
    progress = [line for _, _, way, line in managers.lines if b"notifications/progress" in line]
    assert len(progress) >= 3  # the server lived on, it only dropped our request
    # and the server still serves
    fresh = ToolContext(call_id="c2", cancel=CancelToken(), workspace=ctx.workspace, emit=ctx.emit)
    assert tools_of(manager)["mcp__everything__echo"].run({"message": "x"}, fresh).text == "Echo: x"


def _sent_cancel(managers: Managers, request: int) -> bool:
    for _, _, way, line in managers.lines:
        message = json.loads(line)
        if way == "out" and message.get("method") == "notifications/cancelled":
            return message["params"]["requestId"] == request
    return False


def test_a_server_killed_mid_call_gives_an_error_and_restarts(
    managers: Managers, everything: Path, ctx: ToolContext
) -> None:
    manager = managers(everything_spec(everything))
    tools = tools_of(manager)
    long, echo = (
        tools["mcp__everything__trigger-long-running-operation"],
        tools["mcp__everything__echo"],
    )
    for restart in range(1, MAX_RESTARTS + 1):
        (info,) = manager.statuses()
        assert info.status == "ready" and info.pid is not None
        pid = info.pid
        threading.Timer(0.3, os.killpg, (pid, signal.SIGKILL)).start()
        died = long.run({"duration": 5, "steps": 5}, ctx)
        assert died.status == "error"
        assert died.text.startswith(
            "MCP server everything stopped during the call (killed by SIGKILL"
        ), died.text
        assert f"restarted at the next call (restart {restart} of {MAX_RESTARTS})" in died.text
        again = echo.run({"message": f"back {restart}"}, ctx)
        assert again.text == f"Echo: back {restart}"
        (info,) = manager.statuses()
        assert info.restarts == restart and info.pid not in (None, pid)
    os.killpg(manager.statuses()[0].pid or 0, signal.SIGKILL)
    assert wait_for(lambda: manager.statuses()[0].status == "exited")
    given_up = echo.run({"message": "once more"}, ctx)
    assert given_up.status == "error"
    assert f"restarted {MAX_RESTARTS} times already this session" in given_up.text


def test_streamable_http(managers: Managers, http_server: HttpServer, ctx: ToolContext) -> None:
    manager = managers(spec("web", url=http_server.url))
    (info,) = manager.statuses()
    assert (info.status, info.transport) == ("ready", "http"), info.detail
    tools = tools_of(manager)
    assert tools["mcp__web__echo"].run({"message": "over http"}, ctx).text == "Echo: over http"
    long = tools["mcp__web__trigger-long-running-operation"]
    threading.Timer(0.3, ctx.cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        long.run({"duration": 3, "steps": 3}, ctx)
    assert time.monotonic() - started < 0.3 + CANCEL_BOUND


def test_an_http_server_that_dies_mid_call_is_reconnected(
    managers: Managers, http_server: HttpServer, ctx: ToolContext
) -> None:
    manager = managers(spec("web", url=http_server.url))
    tools = tools_of(manager)
    threading.Timer(0.3, http_server.kill).start()
    died = tools["mcp__web__trigger-long-running-operation"].run({"duration": 5, "steps": 5}, ctx)
    assert died.status == "error"
    assert died.text.startswith("MCP server web stopped during the call"), died.text
    http_server.start()  # back on the same port
    again = tools["mcp__web__echo"].run({"message": "again"}, ctx)
    assert again.text == "Echo: again", again.text
    assert manager.statuses()[0].restarts == 1


def test_a_call_waits_for_a_server_still_starting(
    managers: Managers, ctx: ToolContext, events: list[AgentEvent]
) -> None:
    first = managers(time_spec())
    assert first.statuses()[0].status == "ready"
    assert cache.cached(time_spec().cache_key()) is not None  # its tools were remembered
    second = managers(time_spec(), wait=None)
    assert second.statuses()[0].status == "starting"
    offered = tools_of(second)  # offered before the server is up: from the cache
    assert "mcp__time__get_current_time" in offered
    result = offered["mcp__time__get_current_time"].run({"timezone": "UTC"}, ctx)
    assert result.status == "success", result.text
    assert StatusUpdate("running_tool", "waiting for MCP server time", "mcp") in events


def test_a_slow_server_never_blocks_and_fails_with_its_stderr(managers: Managers) -> None:
    code = (
        "import sys, time; print('booting, please wait', file=sys.stderr, flush=True);"
        "time.sleep(30)"
    )
    slow = spec("slow", sys.executable, "-c", code, startup_timeout=0.5)
    started = time.monotonic()
    manager = managers(slow, wait=None)
    assert time.monotonic() - started < 0.2
    assert manager.tools() == ()
    assert wait_for(lambda: manager.statuses()[0].status == "failed", 10)
    (info,) = manager.statuses()
    assert info.detail == (
        "failed to start: no answer to initialize within 0.5 s; stderr: booting, please wait"
    )
    notices = [n.detail for n in manager.notices()]
    assert notices == [f"MCP server slow {info.detail}"]
    assert manager.notices() == []  # each notice once


@pytest.mark.parametrize(
    ("command", "args", "detail"),
    [
        (
            sys.executable,
            ("-c", "import sys; sys.stderr.write('boom: KEY missing\\n'); sys.exit(3)"),
            "failed to start: it exited (exit status 3); stderr: boom: KEY missing",
        ),
        ("no-such-mcp-server-x", (), "failed to start: cannot run `no-such-mcp-server-x`"),
    ],
)
def test_a_broken_server_is_one_status_line(
    managers: Managers, command: str, args: tuple[str, ...], detail: str
) -> None:
    manager = managers(spec("broken", command, *args))
    (info,) = manager.statuses()
    assert info.status == "failed"
    assert info.detail.startswith(detail), info.detail
    assert "\n" not in info.detail


def test_a_call_to_a_failed_server_says_why(managers: Managers, ctx: ToolContext) -> None:
    broken = spec("broken", sys.executable, "-c", "raise SystemExit(2)")
    cache.remember(broken.cache_key(), (cache.ToolEntry("do", "does it"),))
    manager = managers(broken)
    assert manager.tools() == ()  # its cached tools went with its failure
    tool = McpTool(manager, "broken", cache.ToolEntry("do"), "mcp__broken__do")
    result = tool.run({}, ctx)
    assert result.status == "error"
    assert result.text.startswith("MCP server broken is not available: it failed to start")


def test_leaving_kills_servers_still_starting_at_once(managers: Managers) -> None:
    hang = spec("hang", sys.executable, "-c", "import time; time.sleep(60)", startup_timeout=60)
    manager = managers(hang, wait=None)
    assert wait_for(lambda: manager.statuses()[0].pid is not None)
    pid = manager.statuses()[0].pid
    assert pid is not None
    started = time.monotonic()
    manager.close()
    assert time.monotonic() - started < 0.2
    assert wait_for(lambda: not alive(pid), 2), "the server still runs"


def test_a_ready_server_is_stopped_gracefully_on_close(managers: Managers) -> None:
    manager = managers(time_spec())
    pid = manager.statuses()[0].pid
    assert pid is not None
    manager.close()
    assert not alive(pid)
    (info,) = manager.statuses()
    assert (info.status, info.detail) == ("stopped", "exit status 0")  # it left on EOF


def test_include_and_exclude_filter_the_tools(managers: Managers) -> None:
    only = managers(time_spec(include=("convert_time",)))
    assert [t.name for t in only.tools()] == ["mcp__time__convert_time"]
    without = managers(time_spec(exclude=("convert_time",)))
    assert [t.name for t in without.tools()] == ["mcp__time__get_current_time"]


def test_a_deferred_start_begins_at_the_first_event_of_the_first_reply(
    managers: Managers, tmp_path: Path
) -> None:
    """build_agent defers: nothing runs (no thread, no process) while the first request
    is built and sent; the provider's first event (the request is out) starts them."""
    manager = McpManager(Selection(servers=(time_spec(),)), tap=managers.tap)
    managers.started.append(manager)
    manager.start(now=False)
    provider = manager.gate(ScriptedProvider.from_replies([["hello"]]))
    request = ProviderRequest(system="s", messages=(user_message("hi"),))
    stream = provider.stream(request, CancelToken())
    assert manager.tools() == () and manager.statuses()[0].pid is None
    assert "mcp-loop" not in {thread.name for thread in threading.enumerate()}
    next(stream)  # the first event
    assert wait_for(lambda: manager.statuses()[0].pid is not None)
    list(stream)
    manager.wait_settled(30)
    assert manager.statuses()[0].status == "ready"


def test_closing_before_the_first_request_starts_nothing(managers: Managers) -> None:
    manager = McpManager(Selection(servers=(time_spec(),)))
    managers.started.append(manager)
    manager.start(now=False)
    manager.close()
    manager.tools()  # a request after the end starts nothing
    assert manager.statuses()[0].pid is None
    assert "mcp-loop" not in {thread.name for thread in threading.enumerate()}


def test_the_switch_interval_is_lowered_only_while_the_sdk_loads(managers: Managers) -> None:
    before = sys.getswitchinterval()
    manager = McpManager(Selection(servers=(time_spec(),)))
    managers.started.append(manager)
    manager.start(now=False)
    assert sys.getswitchinterval() == before
    manager.begin()
    lowered = sys.getswitchinterval()  # set before the loop thread starts
    manager.wait_settled(30)
    assert lowered == min(before, 0.0005)
    assert sys.getswitchinterval() == before  # restored once the SDK was in
