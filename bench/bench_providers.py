"""Whole-program figures against an instant local server, per wire format (issue 3).

    .venv/bin/python -m bench.bench_providers [--runs 10] [--exe PATH]

`--exe` picks the `codecoder` to measure; the default is the development venv's, whose
test-only packages (the SDKs pull in typing_extensions, which msgspec then imports) cost
start-up a user's install does not pay. docs/benchmarks.md gives both.

The fake wire server (tests/fakes/wire_server.py) runs in this process on 127.0.0.1;
`codecoder exec` runs as a child process against it through a `[providers.*]` table, as
a user's config would point it at any server. For each wire (chat, responses, anthropic):
- launch → the first HTTP request reaching the server, and launch → exit, one-reply run;
- a 20-round loop of `run_command echo` calls (full-auto), wall per round two ways: the
  20-round run minus the one-reply run, over 20 (start-up noise lands in it), and the
  first request to the 21st as the server saw them, over 20 (the loop alone, its first
  round's one-time costs included); and the peak RSS of that run;
- a 20,000-token answer in one-token SSE chunks with `--json`: first `new_token` line
  read from the pipe → exit.
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

from bench.launcher import Finished, Launcher
from tests.fakes.wire_server import Call, Reply, Text, Use, WireServer

WIRES = {"chat": "/v1", "responses": "/v1", "anthropic": ""}
DEV_EXE = str(Path(sys.executable).with_name("codecoder"))


def bench_env(root: Path, url: str) -> dict[str, str]:
    """The children's environment: user config and data under `root`, a config with a
    `fake-WIRE` provider per wire at `url`, bytecode caching allowed (this machine sets
    PYTHONDONTWRITEBYTECODE=1, which would make every run compile from source)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        FAKE_KEY="sk-bench",
    )
    write_config(root / "config", url)
    return env


def write_config(config_home: Path, url: str) -> None:
    folder = config_home / "codecoder"
    folder.mkdir(parents=True, exist_ok=True)
    tables = [
        f'[providers.fake-{wire}]\nbase_url = "{url}{suffix}"\nwire = "{wire}"\n'
        f'api_key_env = "FAKE_KEY"\n'
        for wire, suffix in WIRES.items()
    ]
    (folder / "config.toml").write_text("\n".join(tables))


class Target:
    """What to run and where: the executable, the environment, the workspace, and the
    launcher that starts it (see bench/launcher.py for why not Popen)."""

    def __init__(self, exe: str, env: dict[str, str], workspace: Path, launcher: Launcher):
        self.exe = exe
        self.env = env
        self.workspace = workspace
        self.launcher = launcher

    def run(self, wire: str, *extra: str) -> Finished:
        finished = self.launcher.run(self.argv(wire, *extra), self.env)
        assert finished.returncode == 0, finished.stderr
        return finished

    def argv(self, wire: str, *extra: str) -> list[str]:
        return [
            self.exe,
            "exec",
            "-m",
            f"fake-{wire}/model",
            "-C",
            str(self.workspace),
            *extra,
            "task",
        ]


def one_reply(server: WireServer, wire: str, target: Target) -> tuple[float, float]:
    server.enqueue(Reply(parts=(Text("The answer is 42."), Use(input=10, output=5))))
    run = target.run(wire)
    first = server.posts[-1].received
    return (first - run.started) * 1000, (run.ended - run.started) * 1000


def twenty_rounds(server: WireServer, wire: str, target: Target) -> tuple[float, float, float]:
    """(ms launch → exit, ms first request → 21st, peak RSS MB)."""
    for i in range(20):
        args = json.dumps({"command": f"echo round {i}"})
        server.enqueue(Reply(parts=(Call("run_command", args, id=f"call_{i}"),)))
    server.enqueue(Reply(parts=(Text("done"),)))
    run = target.run(wire, "--approval", "full-auto")
    posts = [post.received for post in server.posts[-21:]]
    return (run.ended - run.started) * 1000, (posts[-1] - posts[0]) * 1000, run.peak_mb


def long_answer(server: WireServer, wire: str, target: Target) -> float:
    server.enqueue(Reply(parts=(Text("tok " * 20_000, chunk=4),)))
    proc = subprocess.Popen(
        target.argv(wire, "--json"), env=target.env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    first = 0.0
    for line in proc.stdout:
        if first == 0.0 and '"new_token"' in line:
            first = time.monotonic()
    proc.wait()
    assert proc.returncode == 0
    return (time.monotonic() - first) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--exe", default=DEV_EXE, help="the codecoder executable to measure")
    options = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        WireServer() as server,
        Launcher(Path(tmp)) as launcher,
    ):
        root = Path(tmp)
        target = Target(options.exe, bench_env(root, server.url), root, launcher)
        for wire in WIRES:
            one_reply(server, wire, target)  # warm-up: bytecode caches
            firsts, totals = zip(
                *(one_reply(server, wire, target) for _ in range(options.runs)), strict=True
            )
            base = statistics.median(totals)
            runs, loops, peaks = zip(
                *(twenty_rounds(server, wire, target) for _ in range(5)), strict=True
            )
            per_round = (statistics.median(runs) - base) / 20
            in_loop = statistics.median(loops) / 20
            answers = [long_answer(server, wire, target) for _ in range(3)]
            print(f"{wire}:")
            print(f"  launch -> first request   median {statistics.median(firsts):6.1f} ms")
            print(f"  one-reply run, to exit    median {base:6.1f} ms")
            peak, answer = max(peaks), statistics.median(answers)
            print(
                f"  20-round echo loop        {per_round:6.1f} ms per round (run - one-reply),"
                f" {in_loop:.1f} ms (first -> 21st request), peak RSS {peak:.1f} MB"
            )
            print(f"  20,000-token answer       first token -> exit median {answer:6.1f} ms")


if __name__ == "__main__":
    main()
