"""The whole kernel over real HTTP on loopback, once per wire format: a multi-round tool
loop (read a file, a malformed call, run a command, edit, answer), a cancel while the
server has gone silent, and a stream cut mid-reply.

Each round's request is checked for what the previous round produced: tool results in the
wire's own form, and the reasoning proof carried back unchanged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.events import (
    AgentEvent,
    Done,
    Error,
    NewReasoning,
    NewToken,
    ToolFinished,
    ToolStarted,
    Usage,
)
from codecoder.kernel.loop import AgentLoop
from codecoder.providers.client import WireClient
from codecoder.providers.wire import WireName
from codecoder.tools.files import EditFile, ReadFile
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand
from tests.fakes.wire_server import Call, Reply, Text, Think, Use, WireServer
from tests.providers.conftest import OPENING, WIRES, MakeClient

TIMEOUT = 20.0
CANCEL_BOUND = 0.2  # DESIGN.md invariant 4: tests assert 200 ms (the target is 20 ms)


@pytest.fixture
def manager() -> Iterator[ProcessManager]:
    processes = ProcessManager(grace=0.5)
    yield processes
    processes.kill_all()


def start(client: WireClient, workspace: Path, manager: ProcessManager) -> Any:
    tools = [ReadFile(), EditFile(), RunCommand(manager)]
    return AgentLoop(client, tools, workspace, max_rounds=10).start()


def one_turn(client: WireClient, workspace: Path, manager: ProcessManager, task: str) -> Any:
    """The events of one turn, the agent shut down afterwards."""
    handle = start(client, workspace, manager)
    try:
        handle.send(task)
        return handle.wait_done(TIMEOUT)
    finally:
        handle.shutdown()


def tool_rounds() -> list[Reply]:
    return [
        Reply(
            (
                Think("Read the file first.", chunk=2, signature="sig-1", encrypted="enc-1"),
                Text("Reading app.py.", chunk=1),
                Call("read_file", '{"path": "app.py"}', id="call_read", chunk=1),
                Use(input=300, output=20),
            )
        ),
        Reply((Call("run_command", '{"command": "python3 app.py', id="call_bad", chunk=2),)),
        Reply((Call("run_command", '{"command": "python3 app.py"}', id="call_run", chunk=3),)),
        Reply(
            (
                Call(
                    "edit_file",
                    '{"path": "app.py", "old_text": "hello", "new_text": "goodbye"}',
                    id="call_edit",
                    chunk=5,
                ),
            )
        ),
        Reply((Text("Done: app.py now prints goodbye.", chunk=1), Use(input=900, output=12))),
    ]


@pytest.mark.parametrize("wire", WIRES)
def test_a_multi_round_tool_loop(
    wire: WireName,
    server: WireServer,
    make_client: MakeClient,
    manager: ProcessManager,
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text('print("hello")\n')
    server.enqueue(*tool_rounds())
    events = one_turn(make_client(wire), tmp_path, manager, "Make app.py say goodbye.")
    assert events[-1] == Done(cancelled=False, reason="completed")
    assert (tmp_path / "app.py").read_text() == 'print("goodbye")\n'
    finished = {e.id: e for e in events if isinstance(e, ToolFinished)}
    assert [e.id for e in events if isinstance(e, ToolStarted)] == list(finished)
    assert finished["call_read"].status == "success"
    assert (
        finished["call_bad"].error is not None and finished["call_bad"].error.kind == "invalid_args"
    )
    run = finished["call_run"].result
    assert run is not None and run.status == "success" and "hello" in run.text
    assert finished["call_edit"].status == "success"
    text = "".join(e.text for e in events if isinstance(e, NewToken))
    assert text == "Reading app.py.Done: app.py now prints goodbye."
    assert "".join(e.text for e in events if isinstance(e, NewReasoning)) == "Read the file first."
    usage = [e.input_tokens for e in events if isinstance(e, Usage) and e.input_tokens]
    assert usage == [300, 900]  # (Anthropic reports usage on every reply; the script: 2)
    bodies = [post.json for post in server.posts]
    assert len(bodies) == 5
    CHECKS[wire](bodies)


def _chat(bodies: list[dict[str, Any]]) -> None:
    assistant = bodies[1]["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] == "Reading app.py."
    assert assistant["reasoning_content"] == "Read the file first."
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"path":"app.py"}'
    result = bodies[1]["messages"][3]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_read"
    assert 'print("hello")' in result["content"]
    bad = bodies[2]["messages"][-1]
    assert bad["tool_call_id"] == "call_bad" and "invalid_args" in bad["content"]
    assert bodies[2]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == (
        '{"command": "python3 app.py'
    )
    assert "hello" in bodies[3]["messages"][-1]["content"]


def _responses(bodies: list[dict[str, Any]]) -> None:
    items = bodies[1]["input"]
    assert [item["type"] for item in items] == [
        "message",
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ]
    reasoning = items[1]
    assert (reasoning["id"], reasoning["encrypted_content"]) == ("rs_0", "enc-1")
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Read the file first."}]
    assert items[3]["call_id"] == "call_read"
    assert 'print("hello")' in items[4]["output"]
    # The reasoning item stays with its reply in every later round.
    assert all(body["input"][1] == reasoning for body in bodies[2:])
    bad = bodies[2]["input"][-1]
    assert bad["call_id"] == "call_bad" and "invalid_args" in bad["output"]


def _anthropic(bodies: list[dict[str, Any]]) -> None:
    assistant = bodies[1]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Read the file first.",
        "signature": "sig-1",
    }
    assert assistant["content"][2] == {
        "type": "tool_use",
        "id": "call_read",
        "name": "read_file",
        "input": {"path": "app.py"},
    }
    result = bodies[1]["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_read"
    assert 'print("hello")' in result["content"] and "is_error" not in result
    bad = bodies[2]["messages"][-1]["content"][0]
    assert bad["is_error"] is True and "invalid_args" in bad["content"]
    assert all(body["messages"][1] == assistant for body in bodies[2:])


CHECKS = {"chat": _chat, "responses": _responses, "anthropic": _anthropic}


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_while_the_server_is_silent_keeps_the_partial_reply(
    wire: WireName,
    server: WireServer,
    make_client: MakeClient,
    manager: ProcessManager,
    tmp_path: Path,
) -> None:
    opening = OPENING[wire]
    server.enqueue(
        Reply((Text("Half an answ", chunk=1),), hang_after=opening + 14),
        Reply((Text("Resumed."),)),
    )
    handle = start(make_client(wire), tmp_path, manager)
    try:
        handle.send("Explain.")
        assert server.wait_stalled()
        seen = _wait_for_text(handle, "Half an answ")
        cancelled_at = time.monotonic()
        handle.cancel()
        rest = handle.wait_done(TIMEOUT)
        latency = time.monotonic() - cancelled_at
        handle.send("Go on.")
        second = handle.wait_done(TIMEOUT)
    finally:
        handle.shutdown()
    assert rest[-1] == Done(cancelled=True, reason="cancelled")
    assert latency < CANCEL_BOUND, f"cancel took {latency * 1000:.0f} ms"
    assert "".join(e.text for e in seen + rest if isinstance(e, NewToken)) == "Half an answ"
    assert second[-1] == Done(cancelled=False, reason="completed")
    history = json.dumps(server.posts[1].json)
    assert "Half an answ" in history  # the interrupted reply went back as history


def _wait_for_text(handle: Any, text: str) -> list[AgentEvent]:
    seen: list[AgentEvent] = []
    deadline = time.monotonic() + TIMEOUT
    while "".join(e.text for e in seen if isinstance(e, NewToken)) != text:
        seen.append(handle.next_event(max(deadline - time.monotonic(), 0.01)))
    return seen


@pytest.mark.parametrize("wire", WIRES)
def test_a_stream_cut_mid_reply_ends_the_turn_with_an_error(
    wire: WireName,
    server: WireServer,
    make_client: MakeClient,
    manager: ProcessManager,
    tmp_path: Path,
) -> None:
    opening = OPENING[wire]
    server.enqueue(Reply((Text("Some of it", chunk=1),), drop_after=opening + 6))
    events = one_turn(make_client(wire), tmp_path, manager, "Explain.")
    assert events[-1] == Done(cancelled=False, reason="error")
    (error,) = [e for e in events if isinstance(e, Error)]
    assert error.kind == "network" and "cut off mid-stream" in error.message
    assert "Traceback" not in error.message and "\n" not in error.message
    assert len(server.posts) == 1
