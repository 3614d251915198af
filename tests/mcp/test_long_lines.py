"""A server that sends a line longer than the transport reads (stdio.MAX_LINE, 32 MiB):
the call it answers fails with a line that says so and the server keeps serving; a long
line that answers nothing ends the connection, but its restart is not one of the server's
three (it did not crash). Real servers of both SDKs (tests/mcp/servers/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codecoder.kernel.ports import ToolContext
from codecoder.mcp.config import ServerSpec
from codecoder.mcp.manager import McpManager
from codecoder.mcp.stdio import MAX_LINE
from codecoder.mcp.tools import McpTool
from tests.mcp.conftest import Managers, spec

pytestmark = pytest.mark.timeout(120)

SERVERS = Path(__file__).resolve().parent / "servers"


def tools_of(manager: McpManager) -> dict[str, McpTool]:
    return {tool.name: tool for tool in manager.tools()}


def python_spec() -> ServerSpec:
    return spec("big", sys.executable, str(SERVERS / "big.py"))


def test_an_answer_over_the_limit_fails_the_call_and_the_server_stays(
    managers: Managers, ctx: ToolContext
) -> None:
    manager = managers(python_spec())
    (info,) = manager.statuses()
    assert info.status == "ready", info.detail
    tools = tools_of(manager)
    before = tools["mcp__big__echo"].run({"message": "before"}, ctx)
    assert before.text == f"Echo: before from {info.pid}"
    result = tools["mcp__big__big"].run({"mib": (MAX_LINE >> 20) + 8}, ctx)
    assert result.status == "error"
    assert "longer than the 32 MiB CodeCoder reads; it was dropped" in result.text, result.text
    assert "stopped during the call" not in result.text
    after = tools["mcp__big__echo"].run({"message": "after"}, ctx)
    assert after.text == f"Echo: after from {info.pid}"  # the same process
    (info,) = manager.statuses()
    assert (info.status, info.restarts) == ("ready", 0)


def test_the_typescript_sdk_s_answer_with_its_id_last(
    managers: Managers, everything: Path, ctx: ToolContext
) -> None:
    sdk = everything.parents[2] / "sdk"  # node_modules/@modelcontextprotocol/sdk
    manager = managers(spec("big", "node", str(SERVERS / "big.mjs"), str(sdk)))
    (info,) = manager.statuses()
    assert info.status == "ready", info.detail
    tools = tools_of(manager)
    result = tools["mcp__big__big"].run({}, ctx)
    assert result.status == "error"
    assert result.text.startswith("the server's answer was a line of 40 MiB"), result.text
    assert tools["mcp__big__pid"].run({}, ctx).text == f"pid {info.pid}"
    assert manager.statuses()[0].restarts == 0


def test_a_long_line_that_answers_nothing_is_no_crash(managers: Managers, ctx: ToolContext) -> None:
    manager = managers(python_spec())
    tools = tools_of(manager)
    shout, echo = tools["mcp__big__shout"], tools["mcp__big__echo"]
    for _ in range(2):  # a crash would be counted: restart 1 of 3, then 2 of 3
        result = shout.run({"mib": (MAX_LINE >> 20) + 1}, ctx)
        assert result.status == "error"
        assert result.text.startswith(
            "MCP server big stopped during the call (it sent a line of 33 MiB, longer than "
            "the 32 MiB CodeCoder reads (not an answer)"
        ), result.text
        assert result.text.endswith(
            "it is restarted at the next call (it did not crash: not counted)"
        ), result.text
        assert echo.run({"message": "back"}, ctx).text.startswith("Echo: back from ")
    (info,) = manager.statuses()
    assert (info.status, info.restarts) == ("ready", 0)
