"""Resuming a 10,000-message session (issue 5), for docs/benchmarks.md.

    .venv/bin/python -m bench.bench_resume [--messages 10000] [--runs 5]

Builds a session of tool-call/result rounds in a temporary store, then runs
`codecoder exec --resume ID --script ONE_REPLY --trace T` and reports:
- launch → first provider request: from just before the process starts to the loop's
  "thinking" event that precedes the request (time.monotonic is one clock system-wide);
- launch → exit, and the peak RSS of the process;
- in-process: building the provider request on the loaded history, and the wire body for
  each HTTP wire format.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.launcher import Launcher

from codecoder.kernel.messages import Message, Text, ToolCall, tool_result, user_message
from codecoder.kernel.ports import ProviderRequest
from codecoder.kernel.trace import Tracer


def build_session(messages: int) -> str:
    from codecoder.sessions import SessionStore

    store = SessionStore()
    session = store.create(os.getcwd(), "scripted")
    store.append(session, user_message("a long task", id=1))
    next_id = 2
    while next_id <= messages:
        call = ToolCall(f"c{next_id}", "read_file", {"path": f"src/file{next_id}.py"})
        store.append(session, Message(id=next_id, role="assistant", items=(Text("Reading."), call)))
        store.append(
            session,
            Message(id=next_id + 1, role="tool", items=(tool_result(call.id, "x = 1\n" * 300),)),
        )
        next_id += 2
    store.close()
    return session


def resume_run(
    launcher: Launcher, session: str, script: Path, workspace: Path, trace: Path
) -> tuple[float, float, float]:
    """(ms to the first request, ms to exit, peak RSS MB)."""
    trace.unlink(missing_ok=True)
    argv = [
        str(Path(sys.executable).with_name("codecoder")),
        "exec",
        "--resume",
        session,
        "--script",
        str(script),
        "-C",
        str(workspace),
        "--trace",
        str(trace),
        "go on",
    ]
    run = launcher.run(argv, dict(os.environ))
    assert run.returncode == 0, run.stderr
    first = next(
        r["t"]
        for r in Tracer.read(trace)
        if r["dir"] == "event" and r["data"].get("status") == "thinking"
    )
    return (first - run.started) * 1000, (run.ended - run.started) * 1000, run.peak_mb


def in_process(session: str) -> None:
    import msgspec

    from codecoder.providers import anthropic, openai_chat, openai_responses
    from codecoder.providers.wire import WireCache
    from codecoder.sessions import SessionLog, SessionStore

    store = SessionStore()
    messages = SessionLog(store, session).resume()
    store.close()
    samples = []
    request = ProviderRequest(system="system prompt", messages=())
    for _ in range(20):
        started = time.perf_counter()
        request = ProviderRequest(system="system prompt", messages=tuple(messages))
        samples.append((time.perf_counter() - started) * 1000)
    print(f"  ProviderRequest on {len(messages):,} messages: {statistics.median(samples):.3f} ms")
    encode = msgspec.json.Encoder().encode
    for module in (openai_chat, openai_responses, anthropic):
        cache = WireCache()
        started = time.perf_counter()
        encode(module.build_body(request, "model", {}, cache))  # first round fills the cache
        first = (time.perf_counter() - started) * 1000
        samples = []
        for _ in range(10):
            started = time.perf_counter()
            encode(module.build_body(request, "model", {}, cache))
            samples.append((time.perf_counter() - started) * 1000)
        name = module.__name__.rsplit(".", 1)[-1]
        print(
            f"  wire body + JSON, {name:17} first {first:6.1f} ms,"
            f" cached median {statistics.median(samples):6.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Launcher(Path(tmp)) as launcher:
        root = Path(tmp)
        os.environ["XDG_DATA_HOME"] = str(root / "data")
        os.environ["XDG_CONFIG_HOME"] = str(root / "config")
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        session = build_session(options.messages)
        script = root / "one.json"
        script.write_text(json.dumps([["Resumed."]]))
        runs = [
            resume_run(launcher, session, script, root, root / "trace.jsonl")
            for _ in range(options.runs + 1)
        ][1:]  # the first run writes bytecode caches
        firsts, totals, peaks = zip(*runs, strict=True)
        peak = max(peaks)
        print(f"exec --resume of a {options.messages:,}-message session, {options.runs} runs:")
        print(
            f"  launch -> first request  median {statistics.median(firsts):6.1f} ms"
            f"  max {max(firsts):6.1f} ms"
        )
        print(f"  launch -> exit           median {statistics.median(totals):6.1f} ms")
        print(f"  peak RSS of a run        {peak:6.1f} MB")
        in_process(session)


if __name__ == "__main__":
    main()
