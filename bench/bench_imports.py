"""What importing one module costs, per source tree, alternated run by run.

    .venv/bin/python -m bench.bench_imports codecoder.providers.pool /tmp/before/src src
    .venv/bin/python -m bench.bench_imports yaml src --preload re,typing,msgspec

Each run is a fresh `python -X importtime -c "import PRELOAD; import MODULE"` with
PYTHONPATH set to the tree (bytecode caches allowed and warmed first); the figure is the
module's cumulative import time as -X importtime reports it (which runs a little slow:
compare trees, not absolute values). `--preload`: modules the real program has loaded by
then, so that only the margin is counted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path


def one_run(module: str, tree: str, preload: str, env: dict[str, str]) -> float:
    code = (f"import {preload}; " if preload else "") + f"import {module}"
    stderr = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env={**env, "PYTHONPATH": tree},
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    rows = [row for row in stderr.splitlines() if row.rstrip().endswith(f"| {module}")]
    return int(rows[-1].split("|")[1]) / 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("module")
    parser.add_argument("trees", nargs="+", help="`src` folders (or any sys.path entry)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--preload", default="", help="comma-separated modules to load first")
    options = parser.parse_args()
    trees = [str(Path(tree).resolve()) for tree in options.trees]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for tree in trees:
        one_run(options.module, tree, options.preload, env)  # warm-up: bytecode caches
    results: dict[str, list[float]] = {tree: [] for tree in trees}
    for _ in range(options.runs):
        for tree in trees:
            results[tree].append(one_run(options.module, tree, options.preload, env))
    for tree, times in results.items():
        print(
            f"{tree}: import {options.module} median {statistics.median(times):6.1f} ms,"
            f" min {min(times):6.1f} ms ({len(times)} runs)"
        )


if __name__ == "__main__":
    main()
