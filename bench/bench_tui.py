"""The interactive client's figures for docs/benchmarks.md (issue 13).

    .venv/bin/python bench/bench_tui.py [--runs 20] [--trials 50] [--tokens 20000]
                                        [--only launch,cancel,render]

launch  `codecoder --no-daemon --script S` in a pseudo-terminal (100 x 30): from the
        spawn to the first prompt on the screen (drawn before prompt_toolkit is imported;
        keys typed from then on are kept), to prompt_toolkit's first frame (keys echo),
        and to the session being ready (the banner, drawn once the session is open); the
        client's CPU time at its first prompt. Bytecode caching allowed (this machine
        sets PYTHONDONTWRITEBYTECODE=1, which would make every run compile from source),
        after warm-up runs.
cancel  the same client running `sleep 300` (full-auto), Ctrl+C at a random moment 0.2 to
        0.6 s into the command: from the key to the prompt back (the `⊘ cancelled` line and
        the idle prompt are drawn in one write).
render  a 20,000-token Markdown answer (paragraphs with inline code and bold, lists,
        headings, Python blocks, a table) streamed token by token into the client (in
        this process, on a pseudo-terminal whose other end is drained), against printing
        the same tokens raw (one write and flush per token) into the same terminal. Both
        consume the same events from the same kind of queue, as fast as they can.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MARK = "\u203a".encode()  # the prompt's mark
HIDE_CURSOR = b"\x1b[?25l"  # what prompt_toolkit's renderer writes first
COLUMNS, ROWS = 100, 30


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def report(name: str, samples: list[float], unit: str = "ms") -> None:
    print(
        f"  {name:44} median {statistics.median(samples):7.1f} {unit}   "
        f"p90 {percentile(samples, 0.9):7.1f}   p99 {percentile(samples, 0.99):7.1f}   "
        f"max {max(samples):7.1f}"
    )


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        PROMPT_TOOLKIT_NO_CPR="1",
        TERM="xterm-256color",
        XDG_DATA_HOME=str(tmp / "data"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_RUNTIME_DIR=str(tmp / "run"),
    )
    (tmp / "run").mkdir(exist_ok=True)
    return env


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


# --- launch -------------------------------------------------------------------------------


def launch(runs: int, tmp: Path) -> None:
    import pexpect

    env = environment(tmp)
    script = tmp / "launch.json"
    script.write_text(json.dumps([]))
    argv = ["-m", "codecoder", "--no-daemon", "--script", str(script), "-C", str(tmp)]
    first, editor, ready, cpu = [], [], [], []
    for run in range(runs + 3):  # three warm-up runs write the bytecode caches
        started = time.perf_counter()
        child = pexpect.spawn(sys.executable, argv, env=env, dimensions=(ROWS, COLUMNS))
        pid = child.pid
        assert pid is not None
        seen = b""
        prompt_at = editor_at = None
        cpu_at = 0.0
        while b"Ctrl+D leaves" not in seen:
            seen += child.read_nonblocking(1 << 16, timeout=10)
            now = time.perf_counter() - started
            if prompt_at is None and MARK in seen:
                prompt_at = now
                cpu_at = cpu_ms(pid)
            if editor_at is None and HIDE_CURSOR in seen:  # prompt_toolkit's first frame
                editor_at = now
        ready_at = time.perf_counter() - started
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=10)
        child.close()
        if run >= 3 and prompt_at is not None and editor_at is not None:
            first.append(prompt_at * 1000)
            editor.append(editor_at * 1000)
            ready.append(ready_at * 1000)
            cpu.append(cpu_at)
    print(f"launch, {runs} runs (load average {os.getloadavg()[0]:.1f}):")
    report("spawn → first prompt (typing is kept)", first)
    report("spawn → the editor drawn (keys echo)", editor)
    report("spawn → session ready (banner)", ready)
    report("CPU time of the client at its first prompt", cpu)


# --- cancel -------------------------------------------------------------------------------


def cancel(trials: int, tmp: Path) -> None:
    import pexpect

    env = environment(tmp)
    call = {"type": "tool_call", "name": "run_command", "args": {"command": "sleep 300"}}
    script = tmp / "cancel.json"
    script.write_text(json.dumps([[call] for _ in range(trials)]))
    argv = ["-m", "codecoder", "--no-daemon", "--approval", "full-auto", "--script", str(script)]
    child = pexpect.spawn(
        sys.executable, [*argv, "-C", str(tmp)], env=env, dimensions=(ROWS, COLUMNS)
    )
    samples = []
    rng = random.Random(13)
    wait_for(child, b"Ctrl+D leaves")
    for trial in range(trials):
        child.send(f"run {trial}\r")
        wait_for(child, b"sleep 300")
        time.sleep(rng.uniform(0.2, 0.6))
        started = time.perf_counter()
        child.sendcontrol("c")
        wait_for(child, "⊘ cancelled".encode())  # drawn with the idle prompt, in one write
        samples.append((time.perf_counter() - started) * 1000)
        time.sleep(0.05)
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=20)
    child.close()
    print(f"Ctrl+C during a running command, {trials} trials (load {os.getloadavg()[0]:.1f}):")
    report("Ctrl+C → prompt back (command killed)", samples)


def wait_for(child: Any, marker: bytes, timeout: float = 20.0) -> None:
    """Read until `marker` comes out, searching only what is new (pexpect's expect
    searches its whole buffer again at every read: quadratic with a spinner running)."""
    seen = b""
    everything = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        if time.monotonic() > deadline:
            raise TimeoutError(marker, everything[-3000:])
        try:
            chunk = child.read_nonblocking(1 << 16, timeout=0.5)
        except Exception as exc:  # pexpect.TIMEOUT: nothing yet
            if type(exc).__name__ != "TIMEOUT":
                raise
            continue
        seen = seen[-len(marker) :] + chunk
        everything += chunk


# --- render -------------------------------------------------------------------------------

_TEXT = (
    "the function returns a value when the list is empty so we check the length "
    "first and then read each item in turn before we write the result back to it"
)
WORDS = _TEXT.split(" ")


def answer(tokens: int, seed: int = 7) -> list[str]:
    """A Markdown answer of `tokens` tokens (a word and its space, or a line end)."""
    rng = random.Random(seed)
    out: list[str] = []

    def words(count: int) -> None:
        for index in range(count):
            word = rng.choice(WORDS)
            roll = rng.random()
            if roll < 0.05:
                word = f"`{word}()`"
            elif roll < 0.08:
                word = f"**{word}**"
            out.append(word + (" " if index < count - 1 else ""))

    while len(out) < tokens:
        kind = rng.random()
        if kind < 0.5:
            words(rng.randint(30, 90))
            out.append(".\n\n")
        elif kind < 0.7:
            for _ in range(rng.randint(3, 6)):
                out.append("- ")
                words(rng.randint(5, 15))
                out.append("\n")
            out.append("\n")
        elif kind < 0.8:
            out.append("## ")
            words(rng.randint(2, 5))
            out.append("\n\n")
        elif kind < 0.97:
            out.append("```python\n")
            for line in range(rng.randint(4, 14)):
                out += ["def ", f"step_{line}(", "items", "):\n", "    return ", "items", "\n"]
            out.append("```\n\n")
        else:
            out.append("| name | value |\n|---|---|\n")
            for _ in range(4):
                out += ["| ", rng.choice(WORDS), " | ", str(rng.randint(1, 99)), " |\n"]
            out.append("\n")
    out = out[: tokens - 1]
    out.append("\n\nTHE-END")
    return out


class FakeHandle:
    """The handle surface, replaying a turn's events as fast as they are read."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.sent_at = 0.0

    def send(self, text: str) -> None:
        from codecoder.kernel.events import Done, NewToken

        for token in self.tokens:
            self.events.put(NewToken(token))
        self.events.put(Done(cancelled=False, reason="completed"))
        self.sent_at = time.perf_counter()

    def cancel(self) -> None:
        return None

    def next_event(self, timeout: float | None = None) -> Any:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no event within {timeout} s") from None

    def shutdown(self, timeout: float | None = 10.0) -> None:
        self.events.put(None)


class FakeBackend:
    remote = False
    policy = None
    resumed_session = False

    def __init__(self, handle: FakeHandle, workspace: Path) -> None:
        from codecoder.app.options import AgentOptions

        self.handle = handle
        self.workspace = workspace
        self.session_id = "bench000"
        self.model = "bench"
        self.mode = "ask"
        self.options = AgentOptions()

    def history(self) -> list[Any]:
        return []

    def begin_turn(self) -> None:
        return None

    def add_usage(self, usage: Any) -> None:
        return None

    def close(self) -> None:
        self.handle.shutdown()


class Drain:
    """Reads the terminal's other end (as a fast terminal would) and notes when a
    marker has come out."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.seen = bytearray()
        self.found: dict[bytes, float] = {}
        self.wanted: list[bytes] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.seen += chunk
            tail = bytes(self.seen[-(len(chunk) + 64) :])
            for marker in self.wanted:
                if marker not in self.found and marker in tail:
                    self.found[marker] = time.perf_counter()

    def wait(self, marker: bytes, timeout: float = 120.0) -> float:
        self.wanted.append(marker)
        deadline = time.time() + timeout
        while marker not in self.found:
            if marker in self.seen:
                self.found[marker] = time.perf_counter()
            if time.time() > deadline:
                raise TimeoutError(marker)
            time.sleep(0.001)
        return self.found[marker]


def render_client(tokens: list[str], tmp: Path) -> tuple[float, float]:
    """Seconds from the message sent to the end of the answer on the screen, and the
    CPU seconds this process spent meanwhile."""
    import pty

    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_input
    from prompt_toolkit.output import create_output

    from codecoder.app.options import AgentOptions
    from codecoder.cli.tui.app import Client

    master, slave = pty.openpty()
    os.set_blocking(master, True)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    drain = Drain(master)
    terminal_in = os.fdopen(os.dup(slave), "r")
    terminal_out = os.fdopen(os.dup(slave), "w")
    handle = FakeHandle(tokens)
    with create_app_session(input=create_input(terminal_in), output=create_output(terminal_out)):
        client = Client(
            AgentOptions(),
            tmp,
            lambda: FakeBackend(handle, tmp),  # type: ignore[return-value,arg-type]
            color=True,
            daemon=False,
        )

        cpu: list[float] = []

        def person() -> None:
            drain.wait(b"Ctrl+D leaves")
            time.sleep(0.3)  # Markdown warmed up, as it is by the time a person types
            cpu.append(time.process_time())
            os.write(master, b"go\r")
            drain.wait(b"THE-END")
            cpu.append(time.process_time())
            time.sleep(0.2)
            os.write(master, b"\x04")

        typing = threading.Thread(target=person)
        typing.start()
        client.run()
        typing.join()
    ended = drain.found[b"THE-END"]
    for handle_fd in (terminal_in, terminal_out):
        handle_fd.close()
    os.close(slave)
    os.close(master)
    return ended - handle.sent_at, cpu[1] - cpu[0]


def render_raw(tokens: list[str]) -> tuple[float, float]:
    """Seconds to print the same tokens raw, one write and flush per token; CPU seconds."""
    import pty

    master, slave = pty.openpty()
    drain = Drain(master)
    out = os.fdopen(slave, "w")
    handle = FakeHandle(tokens)
    handle.send("go")
    started = time.perf_counter()
    cpu = time.process_time()
    while (event := handle.next_event()) is not None and hasattr(event, "text"):
        out.write(event.text)
        out.flush()
    ended = drain.wait(b"THE-END")
    cpu = time.process_time() - cpu
    out.close()
    os.close(master)
    return ended - started, cpu


def render(count: int, tmp: Path, runs: int) -> None:
    tokens = answer(count)
    size = sum(map(len, tokens))
    raw, ours = [], []
    for _ in range(runs):  # alternated, so that a change in the load hits both
        raw.append(render_raw(tokens))
        ours.append(render_client(tokens, tmp))
    print(
        f"rendering a {len(tokens):,}-token Markdown answer ({size:,} characters), "
        f"{runs} runs (load {os.getloadavg()[0]:.1f}):"
    )
    report("printed raw, a write per token: wall", [s[0] * 1000 for s in raw])
    report("the client (Markdown, live part): wall", [s[0] * 1000 for s in ours])
    report("printed raw: CPU", [s[1] * 1000 for s in raw])
    report("the client: CPU", [s[1] * 1000 for s in ours])
    for index, what in ((0, "wall"), (1, "CPU")):
        ratio = statistics.median(s[index] for s in ours) / statistics.median(s[index] for s in raw)
        print(f"  ratio of medians ({what}): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--render-runs", type=int, default=5)
    parser.add_argument("--only", default="launch,cancel,render")
    options = parser.parse_args()
    wanted = set(options.only.split(","))
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        tmp = Path(folder)
        os.environ.update(environment(tmp))  # the in-process client's store, too
        if "launch" in wanted:
            launch(options.runs, tmp)
        if "cancel" in wanted:
            cancel(options.trials, tmp)
        if "render" in wanted:
            render(options.tokens, tmp, options.render_runs)
        subprocess.run(["true"], check=True)


if __name__ == "__main__":
    main()
