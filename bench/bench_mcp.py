"""MCP figures for docs/benchmarks.md (issue 17).

    .venv/bin/python -m bench.bench_mcp [--calls 200] [--runs 15] [--everything PATH]

1. Tool call round trip: the same tool of the same kind of server, called alternately
   - raw: a minimal JSON-RPC client of our own writing one line to the server's stdin and
     reading one line back (no SDK): the server's own time plus the pipes;
   - ours: McpTool.run on this thread, the way the agent calls it (the facade, the hop to
     the event-loop thread, the SDK's session, our stdio transport, the result as text).
   The overhead is ours minus raw (medians). Servers: mcp-server-time's get_current_time
   (Python) and, with `--everything dist/index.js`, server-everything's echo (node).
2. The GIL while the SDK loads: a thread that sleeps 1 ms in a loop (as the agent's
   threads give up the GIL in each blocking call of a request) while another imports the
   SDK, in fresh interpreters, with the interpreter's 5 ms switch interval and with the
   0.5 ms the manager sets for that time (manager._SwitchInterval): how much longer than
   asked each wake-up takes.
3. First turn: `codecoder exec` one-reply runs against the fake wire server
   (bench_providers), alternated: no MCP server configured, against mcp-server-time
   configured (its tools not yet cached, and cached). Launch → the first HTTP request
   reaching the server, and launch → exit, with a pause between runs: back to back, every
   case took 150-250 ms longer and the cases drifted apart by up to 99 ms from one
   session to the next; with the pause they agree within a few ms (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_providers import bench_env
from tests.fakes.wire_server import Reply, Text, Use, WireServer

TIME_SERVER = str(Path(sys.executable).with_name("mcp-server-time"))
PAUSE = 0.3
"""Seconds between first-turn runs."""


class RawClient:
    """The least a client can do: initialize, then one request line, one answer line."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def round_trips(name: str, argv: list[str], tool: str, args: dict[str, object], calls: int) -> None:
    from codecoder.kernel.cancel import CancelToken
    from codecoder.kernel.ports import ToolContext
    from codecoder.mcp.config import Selection, ServerSpec
    from codecoder.mcp.manager import McpManager

    raw = RawClient(argv)
    manager = McpManager(
        Selection(servers=(ServerSpec(name, "user", "bench", argv[0], tuple(argv[1:])),))
    )
    manager.start()
    manager.wait_settled(60)
    ours_tool = next(t for t in manager.tools() if t.mcp_name == tool)
    ctx = ToolContext(call_id="c", cancel=CancelToken(), workspace=Path("."), emit=lambda e: None)
    raw_ms: list[float] = []
    ours_ms: list[float] = []
    try:
        for _ in range(20):  # warm both paths
            raw.request("tools/call", {"name": tool, "arguments": args})
            ours_tool.run(args, ctx)
        for _ in range(calls):
            started = time.perf_counter()
            raw.request("tools/call", {"name": tool, "arguments": args})
            raw_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            result = ours_tool.run(args, ctx)
            ours_ms.append((time.perf_counter() - started) * 1000)
            assert result.status == "success", result.text
    finally:
        raw.close()
        manager.close()
        manager.join()
    raw_p50, ours_p50 = statistics.median(raw_ms), statistics.median(ours_ms)
    print(f"{name} {tool}, {calls} calls each, alternated:")
    print(f"  raw JSON-RPC   median {raw_p50:6.2f} ms  p90 {_p90(raw_ms):6.2f} ms")
    print(f"  McpTool.run    median {ours_p50:6.2f} ms  p90 {_p90(ours_ms):6.2f} ms")
    print(f"  overhead       median {ours_p50 - raw_p50:6.2f} ms")


def _p90(samples: list[float]) -> float:
    return sorted(samples)[int(0.9 * (len(samples) - 1))]


GIL_PROBE = """
import sys, threading, time
sys.setswitchinterval(float(sys.argv[1]))
done = threading.Event()
def load():
    import mcp.client.session
    done.set()
threading.Thread(target=load).start()
extra = []
while not done.is_set():
    started = time.perf_counter()
    time.sleep(0.001)
    extra.append((time.perf_counter() - started) * 1000 - 1)
extra.sort()
print(extra[len(extra) // 2], extra[int(len(extra) * 0.9)])
"""


def gil_waits(runs: int) -> None:
    results: dict[float, list[tuple[float, float]]] = {0.005: [], 0.0005: []}
    for _ in range(runs):
        for interval, samples in results.items():
            out = subprocess.run(
                [sys.executable, "-c", GIL_PROBE, str(interval)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            samples.append((float(out[0]), float(out[1])))
    print(f"a 1 ms sleep's extra wait while the SDK is imported, {runs} runs each, alternated:")
    for interval, samples in results.items():
        medians, p90s = zip(*samples, strict=True)
        print(
            f"  switch interval {interval * 1000:3.1f} ms: median {statistics.median(medians):5.2f}"
            f" ms, p90 {statistics.median(p90s):5.2f} ms (medians of runs)"
        )


def first_turn(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, WireServer() as server:
        root = Path(tmp)
        cases: dict[str, dict[str, str]] = {}
        for case in ("no MCP server", "a stdio server, tools not cached", "a stdio server, cached"):
            home = root / case.replace(" ", "-").replace(",", "")
            env = bench_env(home, server.url)
            if case != "no MCP server":
                config = home / "config" / "codecoder" / "config.toml"
                with config.open("a") as file:
                    file.write(f'\n[mcp.servers.time]\ncommand = "{TIME_SERVER}"\n')
            cases[case] = env
        _prime_cache(cases["a stdio server, cached"])
        results: dict[str, list[tuple[float, float]]] = {case: [] for case in cases}
        for case, env in cases.items():
            _one_run(server, env, root)  # warm-up: bytecode caches
            if case == "a stdio server, tools not cached":
                _forget_cache(env)
        for _ in range(runs):
            for case, env in cases.items():
                if case == "a stdio server, tools not cached":
                    _forget_cache(env)
                time.sleep(PAUSE)
                results[case].append(_one_run(server, env, root))
        print(f"exec one-reply run, {runs} runs each, alternated:")
        for case, samples in results.items():
            firsts, exits = zip(*samples, strict=True)
            quarter = sorted(firsts)[len(firsts) // 4]
            print(
                f"  {case:34} first request median {statistics.median(firsts):6.1f} ms"
                f" (p25 {quarter:6.1f})   exit median {statistics.median(exits):6.1f} ms"
            )


def _one_run(server: WireServer, env: dict[str, str], root: Path) -> tuple[float, float]:
    server.enqueue(Reply(parts=(Text("The answer is 42."), Use(input=10, output=5))))
    argv = [sys.executable, "-m", "codecoder", "exec", "-m", "fake-chat/model", "-C", str(root)]
    started = time.monotonic()
    done = subprocess.run([*argv, "task"], env=env, capture_output=True, check=False)
    ended = time.monotonic()
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    first = server.posts[-1].received
    return (first - started) * 1000, (ended - started) * 1000


def _prime_cache(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "codecoder", "mcp", "list"], env=env, capture_output=True, check=True
    )


def _forget_cache(env: dict[str, str]) -> None:
    cached = Path(env["XDG_DATA_HOME"]) / "codecoder" / "mcp-tools.json"
    cached.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--everything", help="server-everything's dist/index.js")
    parser.add_argument("--skip-turns", action="store_true")
    options = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as data:
        os.environ["XDG_DATA_HOME"] = data  # the round trips' tool cache
        round_trips(
            "mcp-server-time", [TIME_SERVER], "get_current_time", {"timezone": "UTC"}, options.calls
        )
        if options.everything:
            node = ["node", options.everything, "stdio"]
            round_trips("server-everything", node, "echo", {"message": "hi"}, options.calls)
    gil_waits(min(options.runs, 10))
    if not options.skip_turns:
        first_turn(options.runs)


if __name__ == "__main__":
    main()
