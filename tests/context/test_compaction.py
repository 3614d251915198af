"""Compaction through the real loop: threshold, boundary swap, pairs whole, retry, store."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.context.compaction import (
    SUMMARY_HEADER,
    ThreadedCompactor,
    context_window,
    cut_point,
    estimate_tokens,
)
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Compacted, Done, NewToken, StatusUpdate, ToolFinished
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Message, Text, ToolCall, tool_result
from codecoder.kernel.ports import CompactedView, ProviderRequest, StreamEvent
from codecoder.providers.scripted import ScriptedProvider, parse_script
from tests.invariants import check_history, check_turn
from tests.kernel.helpers import Echo


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def usage(tokens: int) -> dict[str, Any]:
    return {"type": "usage", "input_tokens": tokens, "output_tokens": 10}


class Recorder:
    """Wraps a provider; records every turn request's messages."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.turns: list[tuple[Message, ...]] = []
        self.compactions: list[tuple[Message, ...]] = []

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        target = self.compactions if request.purpose == "compaction" else self.turns
        target.append(request.messages)
        return self.inner.stream(request, cancel)


class Sink:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.compactions: list[CompactedView] = []

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def record_compaction(self, view: CompactedView) -> None:
        self.compactions.append(view)


def setup(
    tmp_path: Path, replies: list[Any], summaries: list[Any], *, window: int = 1000
) -> tuple[AgentLoop, Recorder, Sink, ThreadedCompactor]:
    script = {"format": "codecoder-script/1", "replies": replies, "compaction": summaries}
    provider = Recorder(ScriptedProvider(parse_script(json.dumps(script))))
    compactor = ThreadedCompactor(provider, window=window, keep_fraction=0.05)
    sink = Sink()
    loop = AgentLoop(provider, [Echo()], tmp_path, history=sink, compactor=compactor)
    return loop, provider, sink, compactor


def run(loop: AgentLoop, compactor: ThreadedCompactor, *texts: str) -> list[list[Any]]:
    handle = loop.start()
    turns = []
    try:
        for text in texts:
            handle.send(text)
            turns.append(handle.wait_done(10))
    finally:
        handle.shutdown()
        compactor.close()
    return turns


def test_threshold_triggers_a_summary_swapped_in_at_the_next_round(tmp_path: Path) -> None:
    replies = [
        ["first answer", usage(100)],
        [call("echo", text="a"), usage(900)],  # crosses 80% of the 1000-token window
        [{"type": "sleep", "seconds": 0.2}, call("echo", text="b")],
        ["final", usage(200)],
    ]
    loop, provider, sink, compactor = setup(tmp_path, replies, [["the summary"]])
    first, second = run(loop, compactor, "one", "two")
    check_turn(first)
    events = check_turn(second) and second
    compacted = [e for e in events if isinstance(e, Compacted)]
    assert len(compacted) == 1
    assert compacted[0].before_tokens == 910
    assert compacted[0].after_tokens < compacted[0].before_tokens
    # The swap lands at a round boundary: right before a request, never inside a reply.
    index = events.index(compacted[0])
    assert isinstance(events[index - 1], ToolFinished)
    assert events[index + 1] == StatusUpdate("thinking")
    later = provider.turns[-1]
    assert later[0].text.startswith(SUMMARY_HEADER) and "the summary" in later[0].text
    check_history(later)
    assert later[1].role in ("user", "assistant")
    # Nothing is lost: the store has every message, and the compaction itself.
    assert [m.id for m in sink.messages] == list(range(1, len(sink.messages) + 1))
    assert len(sink.compactions) == 1
    assert sink.compactions[0].first_kept_id == later[1].id


def test_the_summary_request_carries_the_older_history_whole(
    tmp_path: Path, start_agent: Callable[[AgentLoop], AgentHandle]
) -> None:
    replies = [
        [call("echo", text="x" * 400)],
        ["ok", usage(100)],
        ["second", usage(850)],
        ["third", usage(100)],
    ]
    loop, provider, _, compactor = setup(tmp_path, replies, [["summary"]])
    handle = start_agent(loop)
    for text in ("one", "two"):
        handle.send(text)
        handle.wait_done(5)
    assert compactor.wait_idle(5)
    handle.send("three")
    events = handle.wait_done(5)
    handle.shutdown()
    compactor.close()
    assert sum(isinstance(e, Compacted) for e in events) == 1
    sent = provider.compactions[0]
    check_history(sent)
    assert any(m.tool_calls for m in sent), "the tool pair belongs to the summarised part"
    assert sent[-1].role == "user" and "Summarise" in sent[-1].text
    view = provider.turns[-1]
    check_history(view)
    assert not any(m.tool_calls for m in view)


def test_context_length_error_compacts_and_retries_once(tmp_path: Path) -> None:
    replies = [
        ["early answer", usage(50)],
        [call("echo", text="y" * 200)],
        [{"type": "error", "kind": "context_length", "message": "prompt is too long"}],
        ["recovered"],
    ]
    loop, provider, _, compactor = setup(tmp_path, replies, [["short summary"]], window=100_000)
    _, second = run(loop, compactor, "one", "two")
    assert check_turn(second).reason == "completed"
    assert sum(isinstance(e, Compacted) for e in second) == 1
    assert provider.turns[-1][0].text.startswith(SUMMARY_HEADER)
    assert loop.messages[-1].text == "recovered"


def test_a_second_context_length_error_ends_the_turn(tmp_path: Path) -> None:
    too_long = {"type": "error", "kind": "context_length", "message": "too long"}
    replies = [["a", usage(10)], ["b", usage(10)], [too_long], [too_long]]
    loop, _, _, compactor = setup(tmp_path, replies, [["s"]], window=100_000)
    _, _, third = run(loop, compactor, "one", "two", "three")
    assert check_turn(third).reason == "error"


def test_compact_on_demand(tmp_path: Path, start_agent: Callable[[AgentLoop], AgentHandle]) -> None:
    replies = [["answer one", usage(10)], ["answer two", usage(10)]]
    loop, _, _, compactor = setup(tmp_path, replies, [["on demand summary"]], window=100_000)
    handle = start_agent(loop)
    for text in ("one", "two"):
        handle.send(text)
        handle.wait_done(5)
    handle.compact()
    event = handle.next_event(5)
    while isinstance(event, StatusUpdate) and event.status == "compacting":
        event = handle.next_event(5)
    assert isinstance(event, Compacted)
    handle.shutdown()
    compactor.close()
    assert loop.messages[0].text.startswith(SUMMARY_HEADER)
    check_history(loop.messages)


def test_nothing_to_compact_is_said_plainly(
    tmp_path: Path, start_agent: Callable[[AgentLoop], AgentHandle]
) -> None:
    loop, _, _, compactor = setup(tmp_path, [], [], window=100_000)
    handle = start_agent(loop)
    handle.compact()
    statuses = [handle.next_event(5) for _ in range(3)]
    handle.shutdown()
    compactor.close()
    assert StatusUpdate("idle", "nothing to compact", notice="compact") in statuses
    assert not any(isinstance(e, Done) for e in statuses)


def _m(id: int, role: Any, *items: Any) -> Message:
    return Message(id=id, role=role, items=items)


def test_cut_point_never_splits_a_tool_pair() -> None:
    view = [
        _m(1, "user", Text("task")),
        _m(2, "assistant", ToolCall("c1", "echo", {})),
        _m(3, "tool", tool_result("c1", "x" * 400)),
        _m(4, "tool", tool_result("c2", "y" * 400)),
        _m(5, "assistant", Text("answer")),
    ]
    for keep in (1, 50, 150, 250, 10_000):
        cut = cut_point(view, keep, estimate_tokens)
        if cut is not None:
            assert view[cut].role in ("user", "assistant")
            assert 0 < cut < len(view)
    assert cut_point(view[:1], 1, estimate_tokens) is None


def test_window_table_and_config_override() -> None:
    assert context_window("anthropic/claude-sonnet-4-5") == 200_000
    assert context_window("openai/gpt-5-mini") == 400_000
    assert context_window("ollama/unknown") == 128_000
    config = {"models": {"ollama/unknown": {"context_window": 8192}}}
    assert context_window("ollama/unknown", config) == 8192


@pytest.mark.parametrize("background", [True, False])
def test_a_failed_summary_leaves_the_view_alone(tmp_path: Path, background: bool) -> None:
    replies = [[call("echo", text="z" * 300), usage(900)], ["done", usage(10)]]
    failing = [[{"type": "error", "kind": "server"}]]
    loop, _, _, compactor = setup(tmp_path, replies, failing)
    (events,) = run(loop, compactor, "go")
    assert check_turn(events).reason == "completed"
    assert not any(isinstance(e, Compacted) for e in events)
    assert compactor.last_error is not None
    time.sleep(0)  # the worker has been joined by close()
    assert not any(isinstance(e, NewToken) and SUMMARY_HEADER in e.text for e in events)


class Exploding:
    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        raise RuntimeError("boom")


def test_a_crashing_provider_never_leaves_compact_now_waiting() -> None:
    compactor = ThreadedCompactor(Exploding(), window=1000, keep_fraction=0.01)
    view = [
        Message(id=1, role="user", items=(Text("a" * 400),)),
        Message(id=2, role="assistant", items=(Text("b" * 400),)),
        Message(id=3, role="user", items=(Text("c"),)),
    ]
    try:
        assert compactor.compact_now(view, CancelToken()) is None
        assert compactor.last_error is not None and "boom" in compactor.last_error
        compactor.observe(view, None)  # a background job after a crash still completes
        assert compactor.wait_idle(5)
    finally:
        compactor.close()
