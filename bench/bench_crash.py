"""What a SIGKILL of a loaded daemon loses (issue 32, items 5b and 5c).

    .venv/bin/python bench/bench_crash.py [--sessions 20] [--kills 20] [--turns 6]
        [--token-delay 0.002] [--seed 1] [--src DIR]

Each run starts a `codecoder daemon` child on a scripted model (its own XDG folders),
opens `--sessions` sessions over the socket, one client connection and one driver thread
each, and prompts turn after turn: each turn streams a little text and runs commands
(`run_command`, three calls over two rounds), then streams a long answer. Once the
sessions have finished `--turns` turns between them (6 x 20 = 120 by default, as in the
issue), the daemon is SIGKILLed at a random moment of the next second and the store is
opened in this process. Per session, what the client saw is compared with the store:

- **prompts**: every prompt whose turn the client saw start (an update of the turn after
  the prompt was sent) is a stored user message;
- **results**: every tool call the client saw finish (`tool_call_update` completed or
  failed) has its result stored, and not as `cancelled`;
- **streamed**: the answer streaming at the kill (agent_message_chunk text of the round
  seen so far, 32 characters or more) is stored as an interrupted assistant message; its
  kept text is reported as a share of what the client saw. A stream that began less
  than 0.5 s before the kill (`streams_young`) may not have been drafted yet (the loop
  drafts at most every 250 ms) and is counted apart.

The store must also pass `PRAGMA integrity_check` and every session must resume
(SessionLog.resume: repaired, valid for a provider). Run it with `--src` on another
checkout for the figure before a change.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "codecoder"]
ANSWER = "The answer goes on word by word. " * 60


def script(turns: int) -> dict[str, Any]:
    def run(command: str) -> dict[str, Any]:
        return {"type": "tool_call", "name": "run_command", "args": {"command": command}}

    replies: list[Any] = []
    for _ in range(turns):
        replies.append(
            {"token_delay": TOKEN_DELAY, "parts": ["Looking first. " * 4, run("echo a")]}
        )
        replies.append([run("echo b; echo bb"), run("printf c")])
        replies.append({"token_delay": TOKEN_DELAY, "parts": [ANSWER]})
    return {"format": "codecoder-script/1", "replies": replies}


TOKEN_DELAY = 0.002
YOUNG = 0.5
"""A stream the client saw begin less than this long before the kill may have no draft
yet (the loop drafts every 250 ms): counted apart."""


class Driver:
    """One session: prompts a turn as soon as the last is answered, and notes what the
    client saw of each turn."""

    def __init__(self, socket_path: Path, workspace: Path, number: int) -> None:
        from codecoder.daemon.client import DaemonClient

        self.client = DaemonClient(socket_path, timeout=10)
        self.client.initialize()
        new = self.client.call("session/new", {"cwd": str(workspace), "mcpServers": []}, 60)
        self.session: str = new["sessionId"]
        self.number = number
        self.turns_done = 0
        self.started: list[str] = []  # prompts whose turn the client saw start
        self.sent: list[str] = []
        self.finished: dict[str, str] = {}  # tool call id → status seen
        self.streaming = ""  # the current round's agent text
        self.stream_began = 0.0  # when its first chunk came
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _prompt(self) -> None:
        text = f"session {self.number} turn {len(self.sent) + 1}"
        self.sent.append(text)
        params = {"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}
        self.client.call_queued("session/prompt", params)

    def _run(self) -> None:
        self._prompt()
        seen_turn = False
        while True:
            try:
                method, params = self.client.next_message(60)
            except TimeoutError:
                return
            if method == "__closed__":
                return
            if method == "__answer__":
                _, error = params
                if error is not None:
                    return
                self.turns_done += 1
                seen_turn = False
                self.streaming = ""
                self._prompt()
                continue
            if not seen_turn:
                seen_turn = True
                self.started.append(self.sent[-1])
            update = params.get("update", {}) if method == "session/update" else {}
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk":
                if not self.streaming:
                    self.stream_began = time.monotonic()
                self.streaming += update["content"]["text"]
            elif kind == "tool_call":
                self.streaming = ""
            elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
                self.finished[update["toolCallId"]] = update["status"]


def one_run(args: argparse.Namespace, rng: random.Random, root: Path) -> dict[str, Any]:
    env = dict(os.environ)
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        folder = root / name.lower()
        folder.mkdir(mode=0o700)
        env[name] = os.environ[name] = str(folder)
    if args.src:
        env["PYTHONPATH"] = args.src
    path = root / "script.json"
    path.write_text(json.dumps(script(args.turns * 3)))
    proc = subprocess.Popen(
        [*CLI, "daemon", "--script", str(path), "--approval", "full-auto"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    from codecoder import paths

    sock = paths.daemon_socket()
    deadline = time.monotonic() + 20
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no daemon"
        time.sleep(0.02)
    drivers: list[Driver] = []
    try:
        for number in range(args.sessions):
            workspace = root / f"ws{number}"
            workspace.mkdir()
            drivers.append(Driver(sock, workspace, number))
        for driver in drivers:
            driver.thread.start()
        target = args.sessions * args.turns
        deadline = time.monotonic() + 300
        while sum(d.turns_done for d in drivers) < target:
            assert time.monotonic() < deadline, "the sessions stalled"
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 1))
        proc.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        proc.wait()
        done = sum(d.turns_done for d in drivers)
        for driver in drivers:
            driver.thread.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
        for driver in drivers:
            driver.client.close()
    return {"turns": done, **check(drivers, root / "xdg_data_home", killed_at)}


def check(drivers: list[Driver], data: Path, killed_at: float) -> dict[str, Any]:
    from codecoder.kernel.messages import ToolResult
    from codecoder.sessions import SessionLog, SessionStore

    path = data / "codecoder" / "sessions.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
    names = ("prompts", "prompts_lost", "results", "results_lost", "streams", "streams_lost")
    counts: dict[str, int] = dict.fromkeys((*names, "streams_young", "young_lost"), 0)
    shares: list[float] = []
    store = SessionStore(path)
    try:
        for driver in drivers:
            messages = store.load_messages(driver.session)
            users = {m.text for m in messages if m.role == "user"}
            results = {
                item.tool_call_id: item.status
                for m in messages
                for item in m.items
                if isinstance(item, ToolResult)
            }
            counts["prompts"] += len(driver.started)
            counts["prompts_lost"] += sum(1 for p in driver.started if p not in users)
            counts["results"] += len(driver.finished)
            counts["results_lost"] += sum(
                1 for call in driver.finished if results.get(call) in (None, "cancelled")
            )
            seen = driver.streaming
            if len(seen) >= 32:
                young = killed_at - driver.stream_began < YOUNG
                counts["streams_young" if young else "streams"] += 1
                last = messages[-1] if messages else None
                kept = last.text if last is not None and last.role == "assistant" else ""
                if not kept or not (seen.startswith(kept) or kept.startswith(seen)):
                    counts["young_lost" if young else "streams_lost"] += 1
                elif not young:
                    shares.append(min(1.0, len(kept) / len(seen)))
            SessionLog(store, driver.session).resume()
    finally:
        store.close()
    return {**counts, "integrity": integrity, "kept_share": shares}


def main() -> None:
    global TOKEN_DELAY
    parser = argparse.ArgumentParser(description="What a SIGKILL of a loaded daemon loses")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--turns", type=int, default=6, help="turns per session before a kill")
    parser.add_argument("--token-delay", type=float, default=0.002)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--src", default="", help="another checkout's src/ to run")
    args = parser.parse_args()
    TOKEN_DELAY = args.token_delay
    if args.src:
        sys.path.insert(0, args.src)
    rng = random.Random(args.seed)
    totals: dict[str, Any] = {}
    shares: list[float] = []
    for kill in range(args.kills):
        with tempfile.TemporaryDirectory(prefix="bench-crash-") as tmp:
            result = one_run(args, rng, Path(tmp))
        shares += result.pop("kept_share")
        print(f"kill {kill + 1}: {json.dumps(result)}", flush=True)
        for key, value in result.items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    print("total:", json.dumps(totals))
    if shares:
        shares.sort()
        print(
            f"streamed answers kept: {len(shares)}, share of what the client saw:"
            f" min {shares[0]:.2f}, median {shares[len(shares) // 2]:.2f}"
        )


if __name__ == "__main__":
    main()
