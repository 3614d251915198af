"""Sub-agent figures for docs/benchmarks.md (issue 6).

    .venv/bin/python bench/bench_subagents.py [--children 8] [--idle 200] [--repeat 20]

- eight parallel sub-agents on the scripted provider: wall time of the parent's turn
  (one agent call with eight tasks, each child answering at once), median and max;
- memory per idle child: resident set growth per started, idle child loop (its thread,
  channels, toolbox), averaged over many children.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codecoder.app.children import SubagentFactory, SubagentSettings
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Done
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.ports import ProviderRequest, StreamEvent
from codecoder.providers.scripted import ScriptedProvider, parse_script
from codecoder.tools.agent import AgentTask
from codecoder.tools.process import ProcessManager


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def parallel_turn(children: int, workspace: Path) -> float:
    tasks = [{"task": f"task {i}"} for i in range(children)]
    script: dict[str, Any] = {
        "format": "codecoder-script/1",
        "replies": [
            [{"type": "tool_call", "name": "agent", "args": {"tasks": tasks}}],
            ["all done"],
        ],
        "subagents": [
            {"match": f"task {i}$", "replies": [[f"answer {i}"]]} for i in range(children)
        ],
    }
    provider = ScriptedProvider(parse_script(json.dumps(script)))
    settings = SubagentSettings(max_parallel=children)
    factory = SubagentFactory(provider, workspace, ProcessManager(), settings)
    tool = factory.agent_tool()
    assert tool is not None
    loop = AgentLoop(provider, [tool], workspace)
    handle = loop.start()
    started = time.perf_counter()
    handle.send("go")
    events = handle.wait_done(60)
    elapsed = time.perf_counter() - started
    handle.shutdown()
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "completed", done
    return elapsed * 1000


class Unused:
    """A provider an idle child never calls."""

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        raise AssertionError("an idle child made a request")


def idle_child_kib(count: int, workspace: Path) -> float:
    provider = Unused()
    factory = SubagentFactory(provider, workspace, ProcessManager())
    factory(AgentTask(task="warm up")).loop.start().shutdown()
    before = rss_kib()
    handles = [factory(AgentTask(task=f"idle {i}")).loop.start() for i in range(count)]
    time.sleep(0.2)
    after = rss_kib()
    for handle in handles:
        handle.shutdown()
    return (after - before) / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--children", type=int, default=8)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        parallel_turn(options.children, workspace)  # warm-up
        times = [parallel_turn(options.children, workspace) for _ in range(options.repeat)]
        print(
            f"{options.children} parallel sub-agents, parent turn: "
            f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms"
        )
        per_child = idle_child_kib(options.idle, workspace)
        print(f"memory per idle child ({options.idle} children): {per_child:.0f} KiB")


if __name__ == "__main__":
    main()
