"""What checking config files against the schema costs (docs/benchmarks.md, issue 10).

    .venv/bin/python bench/bench_config.py [--runs 20]

1. In fresh interpreters (bytecode caches allowed): the first read of a typical
   `config.toml` with the check (config_schema imported then) and without it, and a
   later read with and without it.
2. `codecoder exec --script` (one reply) start to exit without a config file and with
   one, alternating, so that the machine's drift falls on both alike.
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

CONFIG = """model = "anthropic/claude-sonnet-4-5"

[providers.local]
base_url = "http://localhost:8000/v1"
wire = "chat"
api_key_env = "LOCAL_API_KEY"
models = ["qwen3-coder-30b"]

[compaction]
threshold = 0.8

[subagents]
max_parallel = 4

[permissions]
allow = ["run_command(git status)", "run_command(npm run test:*)", "edit_file(src/**)"]
deny = ["run_command(rm:*)"]
"""

READS = """
import sys, time
from pathlib import Path
import codecoder.config as config
path, schema = Path(sys.argv[1]), (None if sys.argv[2] == "none" else "config")
started = time.perf_counter()
config.read_toml(path, schema)
first = time.perf_counter()
config.read_toml(path, schema)
print((first - started) * 1000, (time.perf_counter() - first) * 1000)
"""


def median_p90(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {statistics.median(ordered):6.2f} ms   p90 {p90:6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    exe = Path(sys.executable).with_name("codecoder")
    with tempfile.TemporaryDirectory() as tmp:
        config_dir = Path(tmp) / "config" / "codecoder"
        config_dir.mkdir(parents=True)
        config = config_dir / "config.toml"
        config.write_text(CONFIG)
        reads: dict[str, list[tuple[float, float]]] = {"checked": [], "none": []}
        for run in range(runs + 2):
            for schema, pairs in reads.items():
                out = subprocess.run(
                    [sys.executable, "-c", READS, str(config), schema],
                    env=env, capture_output=True, text=True, check=True,
                ).stdout.split()  # fmt: skip
                if run >= 2:
                    pairs.append((float(out[0]), float(out[1])))
        print(f"reading a {len(CONFIG.splitlines())}-line config.toml, {runs} interpreters each:")
        for schema, pairs in reads.items():
            print(f"  first read, {schema:8}  {median_p90([p[0] for p in pairs])}")
            print(f"  later read, {schema:8}  {median_p90([p[1] for p in pairs])}")

        script = Path(tmp) / "one.json"
        script.write_text(json.dumps([["The answer is 42."]]))
        env["XDG_DATA_HOME"] = str(Path(tmp) / "data")
        argv = [str(exe), "exec", "--script", str(script), "-C", tmp, "what is the answer?"]
        times: dict[str, list[float]] = {"no config file": [], "with config.toml": []}
        for run in range(runs + 3):
            for name, samples in times.items():
                config_home = Path(tmp) / ("config" if name != "no config file" else "none")
                started = time.perf_counter()
                subprocess.run(
                    argv, env={**env, "XDG_CONFIG_HOME": str(config_home)},
                    capture_output=True, check=True,
                )  # fmt: skip
                if run >= 3:
                    samples.append((time.perf_counter() - started) * 1000)
        print(f"codecoder exec --script (one reply), alternating, {runs} runs each:")
        for name, samples in times.items():
            print(f"  {name:18} {median_p90(samples)}")


if __name__ == "__main__":
    main()
