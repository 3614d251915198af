"""Peak memory against the size of a model's reply (issue 32, the reply caps);
docs/benchmarks.md, "A model's reply and memory".

    .venv/bin/python -m bench.bench_reply_memory [--sizes 1,200] [--wires chat,anthropic]
        [--kinds text,args] [--src DIR]

A fake OpenAI-compatible (or Anthropic) server on 127.0.0.1 (tests/fakes/wire_server.py)
streams one reply of SIZE MB, in 64 KiB deltas, either as text or as the arguments of
one `read_file` call, to `codecoder exec --json -m fake/model`, configured as
`[providers.fake]`. The figures: the exit status, the peak RSS of the exec process
(`ru_maxrss`, started through bench/launcher.py so that this process's size is no floor),
the wall time, and the largest message body the session store kept. `--src` puts another
src/ first on the child's path (for "before" figures from another worktree).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench.launcher import Launcher
from tests.fakes.wire_server import Call, Reply, Text, WireServer, text_reply

EXE = str(Path(sys.executable).with_name("codecoder"))
PIECE = 64 * 1024
FILLER = "x" * PIECE


def flood(kind: str, size_mb: int) -> Reply:
    """A reply of about `size_mb` MB: one 64 KiB delta sent again and again."""
    times = size_mb * 1_000_000 // PIECE
    if kind == "text":
        return Reply((Text(FILLER),), repeat=(FILLER, times))
    pieces = ('{"path": "', FILLER, '"}')
    return Reply((Call("read_file", "{}", pieces=pieces),), repeat=(FILLER, times))


def child_env(root: Path, url: str, wire: str, src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src:
        env["PYTHONPATH"] = src
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        folder = root / var.lower()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[var] = str(folder)
    config = root / "xdg_config_home" / "codecoder"
    config.mkdir(exist_ok=True)
    base = url if wire == "anthropic" else f"{url}/v1"
    (config / "config.toml").write_text(f'[providers.fake]\nbase_url = "{base}"\nwire = "{wire}"\n')
    return env


def largest_stored(root: Path) -> int:
    path = root / "xdg_data_home" / "codecoder" / "sessions.sqlite3"
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT max(length(body)) FROM messages").fetchone()
    return int(row[0] or 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,200")
    parser.add_argument("--wires", default="chat,anthropic")
    parser.add_argument("--kinds", default="text,args")
    parser.add_argument("--src")
    opts = parser.parse_args()
    print(f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for wire in opts.wires.split(","):
        for kind in opts.kinds.split(","):
            for size in (int(s) for s in opts.sizes.split(",")):
                with tempfile.TemporaryDirectory() as tmp, WireServer() as server:
                    root = Path(tmp)
                    (root / "ws").mkdir()
                    env = child_env(root, server.url, wire, opts.src)
                    server.enqueue(flood(kind, size), *(text_reply("done") for _ in range(3)))
                    argv = [EXE, "exec", "--json", "-m", "fake/model", "-C", str(root / "ws")]
                    with Launcher(root) as launcher:
                        started = time.monotonic()
                        done = launcher.run([*argv, "go"], env)
                        took = time.monotonic() - started
                    tail = [x for x in done.stdout.splitlines()[-6:] if '"type":"error"' in x]
                    print(
                        f"{wire:9} {kind:4} {size:4} MB: exit {done.returncode}, "
                        f"peak {done.peak_mb:.1f} MB, {took:.1f} s, "
                        f"largest stored {largest_stored(root) / 1e6:.1f} MB; "
                        f"stdout {len(done.stdout) / 1e6:.1f} MB; {(tail or ['no error'])[0][:200]}"
                    )


if __name__ == "__main__":
    main()
