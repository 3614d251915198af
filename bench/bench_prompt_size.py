"""How big the first request's system prompt and tool schemas are (docs/benchmarks.md,
issue 26), per approval mode, in tokens estimated as characters / 4.

    .venv/bin/python bench/bench_prompt_size.py [--codecoder PATH]

Each figure is read from what `codecoder exec --trace-bodies` sends (the system prompt,
and the tool schemas as JSON) in a fresh git repository with one committed file, with
empty config folders: no AGENTS.md, skills or rules, so only CodeCoder's own text
counts. `--stdin-replies` (stdin empty) makes a run someone answers, as the terminal
client is; without it `exec` has nobody to answer. `--codecoder` measures another
checkout's console script (the figure before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

RUNS = {
    "never-ask (exec's default)": (),
    "ask (the client's default)": ("--stdin-replies", "--approval", "ask"),
    "auto-edit": ("--stdin-replies", "--approval", "auto-edit"),
    "full-auto": ("--stdin-replies", "--approval", "full-auto"),
    "read-only": ("--stdin-replies", "--approval", "read-only"),
}


def measure(codecoder: str, root: Path, flags: tuple[str, ...]) -> tuple[int, int]:
    """Characters of the system prompt and of the tool schemas' JSON."""
    script = root / "script.json"
    script.write_text(json.dumps([["done"]]))
    trace = root / "trace.jsonl"
    trace.unlink(missing_ok=True)
    subprocess.run(
        [codecoder, "exec", "--script", str(script), "-C", str(root / "ws"), "--trace",
         str(trace), "--trace-bodies", *flags, "go"],
        input="",
        capture_output=True,
        text=True,
        check=True,
        env=environment(root),
    )  # fmt: skip
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        if entry["dir"] == "request":
            body = entry["data"]["body"]
            return len(body["system"]), len(json.dumps(body["tools"]))
    raise SystemExit("no request in the trace")


def environment(root: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(root / "home"), GIT_CONFIG_NOSYSTEM="1")
    for name, folder in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data")):
        env[name] = str(root / folder)
    return env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--codecoder", default=str(Path(".venv/bin/codecoder").resolve()))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = root / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("hello\n")
        git = ["git", "-C", str(workspace), "-c", "user.name=b", "-c", "user.email=b@b"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
            subprocess.run([*git, *args], check=True, env=environment(root))
        print(f"{'mode':28} {'prompt':>7} {'tools':>7} {'tokens':>7}")
        for name, flags in RUNS.items():
            system, tools = measure(options.codecoder, root, flags)
            print(f"{name:28} {system:7} {tools:7} {(system + tools) / 4:7.0f}")


if __name__ == "__main__":
    main()
