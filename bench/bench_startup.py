"""Start-up figures for docs/benchmarks.md: wall time of whole `codecoder` processes.

    .venv/bin/python bench/bench_startup.py [--runs 30]

Runs the installed console script (`.venv/bin/codecoder`) with bytecode caching allowed
(this machine sets PYTHONDONTWRITEBYTECODE=1, which would make every run compile from
source), after warm-up runs that write the caches. Reports median and p90 of:
- `codecoder --version`
- `codecoder exec --script ONE_REPLY "task"` (start to exit)
- the same in a git repository (this checkout: the system prompt's changed-files line
  runs git through a git dir of ours, hostgit.py)
- the same with typing_extensions hidden from the whole process (a sitecustomize.py that
  sets it to None in sys.modules), as if the `mcp` SDK's dependencies were not installed:
  issue 17's "start-up unchanged (±5 ms)" is the difference of the two exec lines
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


def timed(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    for _ in range(3):
        subprocess.run(argv, env=env, capture_output=True, check=True)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(f"  {name:40} median {statistics.median(samples):6.1f} ms   p90 {p90:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    exe = Path(sys.executable).with_name("codecoder")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "one.json"
        script.write_text(json.dumps([["The answer is 42."]]))
        env["XDG_DATA_HOME"] = str(Path(tmp) / "data")
        env["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        print(f"start-up, {options.runs} runs each:")
        report("codecoder --version", timed([str(exe), "--version"], env, options.runs))
        one = [str(exe), "exec", "--script", str(script), "-C", tmp, "what is the answer?"]
        report("codecoder exec --script (one reply)", timed(one, env, options.runs))
        checkout = str(Path(__file__).resolve().parents[1])
        in_repo = [*one[:4], "-C", checkout, one[-1]]
        report("  … in a git repository (this checkout)", timed(in_repo, env, options.runs))
        hidden = Path(tmp) / "hidden"
        hidden.mkdir()
        (hidden / "sitecustomize.py").write_text(
            "import sys\nsys.modules['typing_extensions'] = None\n"
        )
        without = {**env, "PYTHONPATH": str(hidden)}
        report("  … without typing_extensions installed", timed(one, without, options.runs))
        report("python -c pass (floor)", timed([sys.executable, "-c", "pass"], env, options.runs))


if __name__ == "__main__":
    main()
