"""Peak memory against a command's output size (issue 32, item 1); docs/benchmarks.md,
"A command's output and memory".

    .venv/bin/python -m bench.bench_output_memory [--sizes 1000000,1000000000] [--reps 3]
        [--only exec,daemon,acp] [--src DIR]

One scripted turn runs `yes … | head -c SIZE` under `run_command` (full-auto) and ends.
The figure is the peak RSS of the process that runs the agent:

- **exec**: `codecoder exec --script` with its output to a file, once with the session
  record on (the default) and once with `[record] enabled = false`, the runs of all
  sizes interleaved. `ru_maxrss` of the child, started through bench/launcher.py (a
  child of this process would inherit its size as a floor).
- **daemon**: a fresh `codecoder daemon` per run; a client in this process creates a
  session, prompts it and reads every update until the answer; then the daemon's VmHWM.
- **acp**: a fresh `codecoder acp` per run, the same requests over its stdin and stdout;
  VmHWM before its stdin is closed.

Each child has its own XDG folders under a temporary directory and bytecode caching
(this machine sets PYTHONDONTWRITEBYTECODE=1, which is lifted); `--src` puts another
src/ first on the children's path (for "before" figures from another worktree).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bench.launcher import Launcher

EXE = str(Path(sys.executable).with_name("codecoder"))
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}
UPDATE = b'{"jsonrpc":"2.0","method":"session/update"'
SRC: str | None = None


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def child_env(root: Path, *, record: bool) -> dict[str, str]:
    """Environment of a child: its own XDG folders (one set per record setting)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if SRC:
        env["PYTHONPATH"] = SRC
    home = root / ("record" if record else "no-record")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        folder = home / var.lower()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[var] = str(folder)
    if not record:
        config = home / "xdg_config_home" / "codecoder"
        config.mkdir(exist_ok=True)
        (config / "config.toml").write_text("[record]\nenabled = false\n")
    return env


def script(root: Path, size: int) -> Path:
    command = f"yes 'the quick brown fox jumps over the lazy dog' | head -c {size}"
    replies = [[{"type": "tool_call", "name": "run_command", "args": {"command": command}}], ["ok"]]
    path = root / f"output-{size}.json"
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


def vm_hwm(pid: int) -> float:
    """Peak RSS of a live process, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def size_name(size: int) -> str:
    return f"{size / 1e9:g} GB" if size >= 10**9 else f"{size / 1e6:g} MB"


# --- exec ------------------------------------------------------------------------------


def bench_exec(root: Path, sizes: list[int], reps: int) -> dict[str, list[float]]:
    workspace = root / "ws-exec"
    workspace.mkdir()
    found: dict[str, list[float]] = {}
    with Launcher(root) as launcher:
        for rep in range(reps + 1):  # the first round warms the bytecode caches
            for record in (True, False):
                env = child_env(root, record=record)
                for size in sizes:
                    argv = [EXE, "exec", "-C", str(workspace), "--approval", "full-auto"]
                    argv += ["--script", str(script(root, size)), "go"]
                    done = launcher.run(argv, env)
                    assert done.returncode == 0, done.stderr
                    if rep:
                        key = f"exec, {size_name(size)}, record {'on' if record else 'off'}"
                        found.setdefault(key, []).append(done.peak_mb)
    return found


# --- daemon and acp ------------------------------------------------------------------------


class Readable(Protocol):
    def readline(self) -> bytes: ...


class Lines:
    """JSON-RPC over a pair of byte streams; `call` reads every message up to its answer."""

    def __init__(self, reader: Readable, write: Callable[[bytes], None]) -> None:
        self.reader = reader
        self.write = write
        self.ids = 0
        self.updates = 0

    def call(self, method: str, params: Any) -> Any:
        self.ids += 1
        line = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.write(json.dumps(line).encode() + b"\n")
        while True:
            raw = self.reader.readline()
            if not raw:
                raise EOFError(f"the agent closed the stream during {method}")
            if raw.startswith(UPDATE):  # not parsed: the client costs the agent no lag
                self.updates += 1
                continue
            message = json.loads(raw)
            if message.get("id") == self.ids and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")


def turn(peer: Lines, workspace: Path) -> None:
    peer.call("initialize", INITIALIZE)
    session = peer.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "go"}]}
    assert peer.call("session/prompt", prompt) == {"stopReason": "end_turn"}


def daemon_run(root: Path, size: int, workspace: Path) -> float:
    env = child_env(root, record=True)
    sock_path = Path(env["XDG_RUNTIME_DIR"]) / "codecoder" / "daemon.sock"
    args = [EXE, "daemon", "--script", str(script(root, size)), "--approval", "full-auto"]
    proc = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(sock_path))
                break
            except OSError:
                sock.close()
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the daemon did not start") from None
                time.sleep(0.02)
        with sock, sock.makefile("rb", buffering=1 << 16) as reader:
            turn(Lines(reader, sock.sendall), workspace)
            return vm_hwm(proc.pid)
    finally:
        proc.terminate()
        proc.wait(15)


def acp_run(root: Path, size: int, workspace: Path) -> float:
    env = child_env(root, record=True)
    args = [EXE, "acp", "--script", str(script(root, size)), "--approval", "full-auto"]
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    try:
        turn(Lines(proc.stdout, write), workspace)
        return vm_hwm(proc.pid)
    finally:
        stdin.close()
        proc.wait(15)
        proc.stdout.close()


def bench_served(
    root: Path, sizes: list[int], reps: int, faces: list[str]
) -> dict[str, list[float]]:
    workspace = root / "ws-served"
    workspace.mkdir()
    runs = {"daemon": daemon_run, "acp": acp_run}
    found: dict[str, list[float]] = {}
    for rep in range(reps + 1):
        for face in faces:
            for size in sizes:
                peak = runs[face](root, size, workspace)
                if rep:
                    found.setdefault(f"{face}, {size_name(size)}", []).append(peak)
    return found


def main() -> None:
    global SRC
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000000,1000000000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", default="exec,daemon,acp")
    parser.add_argument("--src", default=None)
    options = parser.parse_args()
    SRC = options.src
    sizes = [int(s) for s in options.sizes.split(",")]
    only = options.only.split(",")
    print(f"output memory: sizes {sizes}, {options.reps} runs each, load {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-output-") as tmp:
        root = Path(tmp)
        found: dict[str, list[float]] = {}
        if "exec" in only:
            found |= bench_exec(root, sizes, options.reps)
        served = [face for face in ("daemon", "acp") if face in only]
        if served:
            found |= bench_served(root, sizes, options.reps, served)
    for name, peaks in found.items():
        values = ", ".join(f"{p:.1f}" for p in peaks)
        print(f"  {name:32} peak RSS median {statistics.median(peaks):7.1f} MB  ({values})")
    print(f"  load after: {load()}")


if __name__ == "__main__":
    main()
