"""Sub-agents through the real kernel: parallel children, cancellation, narrowing, depth."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codecoder.app.children import SubagentFactory, SubagentSettings
from codecoder.context.profiles import AgentProfile
from codecoder.kernel.events import Done, NewToken, Subagent, ToolFinished, ToolStarted
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.ports import Tool
from codecoder.providers.scripted import ScriptedProvider, parse_script
from codecoder.tools.process import ProcessManager
from tests.invariants import check_history, check_turn
from tests.procfs import alive


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def agent_loop(
    tmp_path: Path,
    replies: list[Any],
    subagents: list[dict[str, Any]],
    *,
    settings: SubagentSettings | None = None,
    profiles: tuple[AgentProfile, ...] = (),
) -> AgentLoop:
    script = {"format": "codecoder-script/1", "replies": replies, "subagents": subagents}
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    factory = SubagentFactory(
        provider, tmp_path, ProcessManager(), settings or SubagentSettings(), profiles
    )
    tool = factory.agent_tool()
    assert tool is not None
    tools: list[Tool] = [tool]
    return AgentLoop(provider, tools, tmp_path)


def run_turn(loop: AgentLoop, text: str = "go", timeout: float = 20) -> list[Any]:
    handle = loop.start()
    try:
        handle.send(text)
        return handle.wait_done(timeout)
    finally:
        handle.shutdown()


def test_parallel_children_overlap_and_answers_keep_task_order(tmp_path: Path) -> None:
    tasks = [{"task": f"look at part {i}"} for i in range(4)]
    subagents = [
        {"match": f"part {i}", "replies": [[{"type": "sleep", "seconds": 0.4}, f"answer {i}"]]}
        for i in (3, 1, 0, 2)  # claimed by regex, not by position
    ]
    loop = agent_loop(tmp_path, [[call("agent", tasks=tasks)], ["summary"]], subagents)
    started = time.monotonic()
    events = run_turn(loop)
    elapsed = time.monotonic() - started
    assert check_turn(events).reason == "completed"
    assert elapsed < 1.2, f"4 x 0.4 s children took {elapsed:.2f} s: not parallel"
    result = next(e for e in events if isinstance(e, ToolFinished)).result
    assert result is not None
    positions = [result.text.index(f"answer {i}") for i in range(4)]
    assert positions == sorted(positions)
    check_history(loop.messages)


def test_child_events_are_wrapped_between_the_parent_tool_events(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("content")
    subagents = [
        {"match": "read", "replies": [[call("read_file", path="a.txt")], ["it says content"]]}
    ]
    loop = agent_loop(
        tmp_path, [[call("agent", tasks=[{"task": "read a.txt"}])], ["ok"]], subagents
    )
    events = run_turn(loop)
    check_turn(events)
    kinds = [type(e).__name__ for e in events]
    first, last = kinds.index("ToolStarted"), kinds.index("ToolFinished")
    wrapped = [e for e in events if isinstance(e, Subagent)]
    assert wrapped and all(first < events.index(e) < last for e in wrapped)
    ids = {e.agent_id for e in wrapped}
    assert len(ids) == 1 and next(iter(ids)).startswith("sub1-")
    inner = [e.event for e in wrapped]
    check_turn(inner)  # the child's own turn keeps the invariants
    assert any(isinstance(e, ToolStarted) and e.name == "read_file" for e in inner)
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.result is not None and finished.result.text == "it says content"


def test_a_child_cannot_write(tmp_path: Path) -> None:
    subagents = [
        {
            "match": ".",
            "replies": [[call("write_file", path="x.txt", content="pwned")], ["could not"]],
        }
    ]
    loop = agent_loop(tmp_path, [[call("agent", tasks=[{"task": "write"}])], ["ok"]], subagents)
    events = run_turn(loop)
    inner = [e.event for e in events if isinstance(e, Subagent)]
    refused = next(e for e in inner if isinstance(e, ToolFinished))
    assert refused.error is not None and refused.error.kind == "unknown_tool"
    assert not (tmp_path / "x.txt").exists()


def test_cancelling_the_parent_kills_the_childs_command(
    tmp_path: Path, start_agent: Callable[[AgentLoop], AgentHandle]
) -> None:
    pidfile = tmp_path / "pid"
    subagents = [
        {
            "match": ".",
            "replies": [[call("run_command", command=f"echo $$ > {pidfile}; exec sleep 100")]],
        }
    ]
    settings = SubagentSettings(run_command=True)
    loop = agent_loop(
        tmp_path, [[call("agent", tasks=[{"task": "run"}])]], subagents, settings=settings
    )
    handle = start_agent(loop)
    handle.send("go")
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)
    pid = int(pidfile.read_text())
    os.kill(pid, 0)  # running
    started = time.monotonic()
    handle.cancel()
    events = handle.wait_done(10)
    assert time.monotonic() - started < 2.0
    handle.shutdown()
    assert check_turn(events).reason == "cancelled"
    outer = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.status for e in outer] == ["cancelled"]
    assert not alive(pid)
    check_history(loop.messages)


def test_depth_limit_removes_the_agent_tool(tmp_path: Path) -> None:
    subagents = [
        {"match": "outer", "replies": [[call("agent", tasks=[{"task": "inner"}])], ["tried"]]},
        {"match": "inner", "replies": [["inner answer"]]},
    ]
    deep = agent_loop(
        tmp_path,
        [[call("agent", tasks=[{"task": "outer"}])], ["ok"]],
        subagents,
        settings=SubagentSettings(max_depth=2),
    )
    events = run_turn(deep)
    grandchild = [
        e.event.event for e in events if isinstance(e, Subagent) and isinstance(e.event, Subagent)
    ]
    assert any(isinstance(e, NewToken) for e in grandchild)  # wrapped twice
    shallow = agent_loop(
        tmp_path,
        [[call("agent", tasks=[{"task": "outer"}])], ["ok"]],
        subagents,
        settings=SubagentSettings(max_depth=1),
    )
    events = run_turn(shallow)
    inner = [e.event for e in events if isinstance(e, Subagent)]
    refused = next(e for e in inner if isinstance(e, ToolFinished))
    assert refused.error is not None and refused.error.kind == "unknown_tool"


def test_profiles_only_narrow_the_toolbox(tmp_path: Path) -> None:
    profile = AgentProfile(
        name="searcher",
        description="greps",
        instructions="Only search.",
        tools=("grep", "write_file", "run_command"),
        model=None,
        path=tmp_path / "searcher.md",
    )
    factory = SubagentFactory(
        ScriptedProvider.from_replies([]), tmp_path, ProcessManager(), profiles=(profile,)
    )
    assert [t.name for t in factory.toolbox(profile)] == ["grep"]
    assert [t.name for t in factory.toolbox(None)] == [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "agent",
    ]


def test_unknown_profile_is_an_argument_error(tmp_path: Path) -> None:
    loop = agent_loop(
        tmp_path, [[call("agent", tasks=[{"task": "x", "profile": "ghost"}])], ["ok"]], []
    )
    events = run_turn(loop)
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.error is not None and finished.error.kind == "invalid_args"
    assert "ghost" in finished.error.message


def test_eight_parallel_children_finish_without_deadlock(tmp_path: Path) -> None:
    tasks = [{"task": f"task {i}"} for i in range(8)]
    subagents = [{"match": f"task {i}$", "replies": [[f"done {i}"]]} for i in range(8)]
    loop = agent_loop(
        tmp_path,
        [[call("agent", tasks=tasks)], ["all done"]],
        subagents,
        settings=SubagentSettings(max_parallel=8),
    )
    started = time.monotonic()
    events = run_turn(loop)
    assert time.monotonic() - started < 10.0  # target 1 s; 10x here
    assert check_turn(events).reason == "completed"
    assert isinstance(events[-1], Done)


def test_settings_come_from_the_user_table_and_ignore_bad_values() -> None:
    settings = SubagentSettings.from_config(
        {"max_parallel": 3, "max_depth": 0, "run_command": "yes", "max_rounds": True}
    )
    assert settings == SubagentSettings(max_parallel=3, max_depth=2, run_command=False)
    assert SubagentSettings.from_config({"run_command": True}).run_command is True


def test_a_child_that_cannot_start_is_an_error_not_a_hang(tmp_path: Path) -> None:
    from codecoder.kernel.cancel import CancelToken
    from codecoder.kernel.subagents import ChildSpec, run_children

    broken = AgentLoop(ScriptedProvider.from_replies([]), [], tmp_path)
    broken.start().shutdown()  # a loop's thread can start only once
    healthy = AgentLoop(ScriptedProvider.from_replies([["fine"]]), [], tmp_path)
    outcomes = run_children(
        [ChildSpec("a", broken, read_only=True), ChildSpec("b", healthy, read_only=True)],
        cancel=CancelToken(),
        emit=lambda event: None,
    )
    assert [o.status for o in outcomes] == ["error", "completed"]
    assert "crashed" in outcomes[0].error


def test_children_trace_under_their_own_names_into_the_parents_trace(tmp_path: Path) -> None:
    """Issue 16: a sub-agent's commands and events are lines of the parent's trace, each
    with the child's name; parallel children's lines interleave, numbered in one order."""
    from codecoder.kernel.trace import Tracer

    tracer = Tracer(tmp_path / "trace.jsonl")
    tasks = [{"task": f"look at part {i}"} for i in range(2)]
    subagents = [{"match": f"part {i}", "replies": [[f"answer {i}"]]} for i in range(2)]
    script = {"format": "codecoder-script/1", "replies": [[call("agent", tasks=tasks)], ["ok"]]}
    script["subagents"] = subagents
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    factory = SubagentFactory(provider, tmp_path, ProcessManager(), tracer=tracer)
    tool = factory.agent_tool()
    assert tool is not None
    loop = AgentLoop(provider, [tool], tmp_path, tracer=tracer)
    events = run_turn(loop)
    tracer.close()
    records = Tracer.read(tmp_path / "trace.jsonl")
    children = {e.agent_id for e in events if isinstance(e, Subagent)}
    assert len(children) == 2
    assert {r["agent"] for r in records} == {"agent", *children}
    for child in children:
        own = [r for r in records if r["agent"] == child]
        assert own[0]["dir"] == "command" and own[0]["data"]["type"] == "process_message"
        assert {r["thread"] for r in own if r["dir"] == "event"} == {f"{child}-loop"}
        assert own[-1]["data"]["type"] == "shutdown" or any(
            r["data"].get("type") == "done" for r in own
        )
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)


def test_each_agents_request_hashes_are_the_hashes_of_its_requests(tmp_path: Path) -> None:
    """Parallel children hash their requests on their own threads, each with its own
    running hash: every request line's sha256 is that of the body it was sent with."""
    from codecoder.kernel import codec
    from codecoder.kernel.ports import ProviderRequest
    from codecoder.kernel.trace import RequestDigest, Tracer

    tracer = Tracer(tmp_path / "trace.jsonl", bodies=True)
    tasks = [{"task": f"look at part {i}"} for i in range(3)]
    subagents = [
        {"match": f"part {i}", "replies": [[call("read_file", path="a.txt")], [f"answer {i}"]]}
        for i in range(3)
    ]
    script = {"format": "codecoder-script/1", "replies": [[call("agent", tasks=tasks)], ["ok"]]}
    script["subagents"] = subagents
    (tmp_path / "a.txt").write_text("text\n")
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    factory = SubagentFactory(provider, tmp_path, ProcessManager(), tracer=tracer)
    tool = factory.agent_tool()
    assert tool is not None
    run_turn(AgentLoop(provider, [tool], tmp_path, tracer=tracer))
    tracer.close()
    requests = [r for r in Tracer.read(tmp_path / "trace.jsonl") if r["dir"] == "request"]
    assert len({r["agent"] for r in requests}) == 4
    assert len(requests) == 2 + 3 * 2
    for record in requests:
        body = codec.convert(record["data"]["body"], ProviderRequest)
        assert record["data"]["sha256"] == RequestDigest().digest(body)[0], record["agent"]
