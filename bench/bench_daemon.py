"""The daemon's figures (issue 12, "What it must reach"); docs/benchmarks.md, "Daemon".

    .venv/bin/python bench/bench_daemon.py [--only stream,acp,attach,idle]
        [--clients 50] [--tokens 100000] [--token-delay 0] [--window S] [--rounds 5]
        [--runs 20] [--idle 10] [--src DIR]

- **stream**: one session streams a reply of `--tokens` one-word tokens (scripted
  provider, `--token-delay` seconds before each, 0 by default) while `--clients` clients
  are attached over the socket, and again with none; rounds alternate, after one
  warm-up turn. The daemon (DaemonServer + Hub) runs in this process, so that the CPU
  time of its threads can be read: the agent thread (named agent-loop), the session's
  broadcaster, the connections' writers (each thread's schedstat, what thread_time()
  reads on the thread itself). The turn is prompted in-process through
  LiveSession.prompt, the same call in both cases. The clients are real socket
  connections, one thread each in a child process (their decoding never holds this
  process's GIL): each connects, initializes, attaches (`_codecoder/session/attach`),
  concatenates every agent_message_chunk it receives and compares it with the script's
  text. `--window` sets the session's COALESCE_WINDOW for the run (0: join only the
  tokens already queued, as before it existed).
- **acp**: a fresh `codecoder acp` (the venv's console script) is written `initialize`
  at spawn; the figure is spawn → its answer. Alternated with `codecoder --version`
  (spawn → exit), with `codecoder acp` spawn → `session/new` answered (what an editor
  waits for before its first prompt), and with the smallest agent of the asyncio ACP SDK
  (docs/adr/0002-daemon-threads.md); VmHWM of each when it has answered.
- **attach**: a `codecoder daemon` child streams a long reply (token_delay 2 ms) after
  a first finished turn; a client in this process connects, initializes and attaches;
  the figure is connect → the first `session/update` frame.
- **idle**: a `codecoder daemon` child with one session (one short turn done) and its
  client still attached: VmRSS and VmHWM, then utime+stime and every thread's context
  switches over `--idle` seconds; then VmRSS with `--clients` more clients attached.

Children get bytecode caching (this machine sets PYTHONDONTWRITEBYTECODE=1) and their
own XDG folders under a temporary directory; `--src` puts another src/ first on their
path (and this process's). The load average is printed with each part.
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
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

EXE = str(Path(sys.executable).with_name("codecoder"))
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


def load() -> str:
    """The load averages (1, 5, 15 minutes)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


SRC: str | None = None
"""--src: the `codecoder` package to measure (a worktree's src/, for "before" figures)."""


def child_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if SRC:
        env["PYTHONPATH"] = SRC
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        folder = root / var.lower()
        folder.mkdir(exist_ok=True, mode=0o700)
        env[var] = str(folder)
    return env


def write_script(path: Path, replies: list[Any]) -> Path:
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


def words(count: int) -> str:
    """`count` distinct one-word tokens (the scripted provider splits after whitespace),
    so that a chunk lost, doubled or out of place changes the concatenation."""
    return "".join(f"t{i} " for i in range(count))


def median(values: list[float]) -> float:
    return statistics.median(values)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.9 * (len(ordered) - 1))]


class Peer:
    """A bare JSON-RPC client over the daemon's socket (no code of ours on this side)."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb", buffering=65536)
        self._ids = 0

    def send(self, method: str, params: Any) -> int:
        self._ids += 1
        line = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self.sock.sendall(json.dumps(line).encode() + b"\n")
        return self._ids

    def read(self) -> dict[str, Any]:
        line = self.file.readline()
        if not line:
            raise EOFError("the daemon closed the connection")
        return json.loads(line)

    def call(self, method: str, params: Any) -> Any:
        """Send a request and read up to its answer (what comes first is dropped)."""
        request_id = self.send(method, params)
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def close(self) -> None:
        self.file.close()
        self.sock.close()


# --- stream: many clients on one session ---------------------------------------------


def clients_worker(path: str, count: int) -> None:
    """The child process of the stream part. Per round (a line `SESSION EXPECTED_FILE`
    on stdin), `count` client threads attach and it says `attached`; each reads the
    stream until it holds as many characters as expected, and it reports them all as one
    JSON line; the clients stay connected until the line `leave` (so that the daemon's
    writer threads can be measured first)."""
    for line in sys.stdin:
        session_id, expected_file = line.split()
        expected = Path(expected_file).read_text()
        attached = threading.Barrier(count + 1)
        finished = threading.Barrier(count + 1)
        leave = threading.Event()
        results: list[dict[str, Any]] = [{} for _ in range(count)]
        threads = [
            threading.Thread(
                target=stream_client,
                args=(path, session_id, expected, results, i),
                kwargs={"attached": attached, "finished": finished, "leave": leave},
            )
            for i in range(count)
        ]
        for thread in threads:
            thread.start()
        attached.wait()
        print("attached", flush=True)
        finished.wait()
        print(json.dumps(results), flush=True)
        assert sys.stdin.readline().strip() == "leave"
        leave.set()
        for thread in threads:
            thread.join()


def stream_client(
    path: str,
    session_id: str,
    expected: str,
    results: list[dict[str, Any]],
    index: int,
    *,
    attached: threading.Barrier,
    finished: threading.Barrier,
    leave: threading.Event,
) -> None:
    """One client: attach, then concatenate every agent_message_chunk and compare."""
    import msgspec

    decode = msgspec.json.Decoder().decode
    peer = Peer(path, timeout=120)
    try:
        peer.call("initialize", INITIALIZE)
        peer.call("_codecoder/session/attach", {"sessionId": session_id})
        attached.wait()
        parts: list[str] = []
        size = frames = 0
        while size < len(expected):
            message = decode(peer.file.readline())
            if message.get("method") != "session/update":
                continue
            update = message["params"]["update"]
            if update.get("sessionUpdate") == "agent_message_chunk":
                text = update["content"]["text"]
                parts.append(text)
                size += len(text)
                frames += 1
        got = "".join(parts)
        results[index] = {
            "ok": got == expected,
            "chars": len(got),
            "frames": frames,
            "ended": time.monotonic(),
        }
    except Exception as exc:
        results[index] = {"ok": False, "error": repr(exc), "ended": time.monotonic()}
    finally:
        finished.wait()
        leave.wait()
        peer.close()


class _Prompter:
    """Stands in for the connection of the client that prompted: the session answers it
    when the turn is done. Both cases prompt through it, so the agent does the same."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: Any = None

    def respond(self, request_id: Any, result: Any) -> bool:
        self.answer = result
        self.done.set()
        return True

    def error(self, request_id: Any, code: int, message: str, data: Any = None) -> bool:
        self.answer = {"error": message}
        self.done.set()
        return True

    def send_bytes(self, frame: bytes) -> bool:
        return True


def thread_cpu(thread: threading.Thread) -> float | None:
    """CPU seconds of `thread` so far: the first field of its schedstat (the kernel's
    sum_exec_runtime in ns, what time.thread_time() reads on the thread itself), or
    None once it has ended. (pthread_getcpuclockid of a thread that has ended crashes.)"""
    try:
        text = Path(f"/proc/self/task/{thread.native_id}/schedstat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # ended, or ending
        return None
    return int(text.split()[0]) / 1e9


def switches(thread: threading.Thread) -> int:
    """Context switches of `thread` so far (voluntary and not)."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches:" in line)


def cpu(thread: threading.Thread) -> float:
    found = thread_cpu(thread)
    assert found is not None, f"{thread.name} has ended"
    return found


def bench_stream(options: argparse.Namespace, root: Path) -> None:
    env = child_env(root)
    os.environ.update({k: v for k, v in env.items() if k.startswith("XDG_")})
    from codecoder.app.options import AgentOptions
    from codecoder.daemon import session
    from codecoder.daemon.handler import Hub
    from codecoder.daemon.server import DaemonServer

    if options.window is not None:
        session.COALESCE_WINDOW = options.window

    text = words(options.tokens)
    expected = root / "expected.txt"
    expected.write_text(text)
    rounds = 2 * options.rounds + 1  # a warm-up turn, then alternating
    reply = {"token_delay": options.token_delay, "parts": [{"type": "text", "text": text}]}
    script = write_script(root / "stream.json", [reply] * rounds)
    workspace = root / "ws"
    workspace.mkdir()
    hub = Hub(AgentOptions(script=str(script), approval="never-ask"))
    server = DaemonServer(hub, Path(env["XDG_RUNTIME_DIR"]) / "codecoder" / "daemon.sock")
    server.start()
    worker = subprocess.Popen(
        [sys.executable, __file__, "_clients", str(server.path), str(options.clients)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert worker.stdin is not None and worker.stdout is not None
    print(
        f"stream: {options.tokens:,} tokens (token_delay {options.token_delay:g} s), "
        f"{options.clients} clients vs none, {options.rounds} rounds each, coalescing window "
        f"{getattr(session, 'COALESCE_WINDOW', 0) * 1000:g} ms, load {load()}"
    )
    figures: dict[int, list[dict[str, float]]] = {0: [], options.clients: []}
    plan = [0] + [c for _ in range(options.rounds) for c in (options.clients, 0)]
    for index, clients in enumerate(plan):
        live = hub.new(str(workspace))
        agent = next(t for t in threading.enumerate() if t.name == "agent-loop" and t.is_alive())
        broadcaster = next(t for t in threading.enumerate() if t.name.startswith("broadcast-"))
        if clients:
            worker.stdin.write(f"{live.id} {expected}\n")
            worker.stdin.flush()
            assert worker.stdout.readline().strip() == "attached"
        writers = {
            t: used
            for t in threading.enumerate()
            if t.name.startswith("rpc-write") and (used := thread_cpu(t)) is not None
        }  # this round's clients' (the last round's may still be closing)
        before = (cpu(agent), cpu(broadcaster), time.process_time(), switches(agent))
        prompter = _Prompter()
        started = time.monotonic()
        live.prompt(prompter, 1, "stream")  # type: ignore[arg-type]
        assert prompter.done.wait(600), "the turn never ended"
        ended = time.monotonic()
        after = (cpu(agent), cpu(broadcaster), switches(agent))
        assert prompter.answer == {"stopReason": "end_turn"}, prompter.answer
        row = {
            "agent": after[0] - before[0],
            "broadcast": after[1] - before[1],
            "switches": after[2] - before[3],
            "wall": ended - started,
        }
        if clients:
            results = json.loads(worker.stdout.readline())  # every client has it all
            row["writers"] = sum((thread_cpu(t) or used) - used for t, used in writers.items())
            worker.stdin.write("leave\n")
            worker.stdin.flush()
            bad = [r for r in results if not r.get("ok")]
            row["last_client"] = max(r["ended"] for r in results) - started
            row["frames"] = median([r.get("frames", 0) for r in results])
            row["bad"] = len(bad)
            if bad:
                print(f"  round {index}: {len(bad)} clients got a wrong stream: {bad[:3]}")
        row["process"] = time.process_time() - before[2]
        if index:  # the first turn warms up
            figures[clients].append(row)
        live.close()  # its agent thread ends: the next round finds its own by name
    worker.stdin.close()
    worker.wait()
    server.stop()
    report_stream(figures, options.clients)


def report_stream(figures: dict[int, list[dict[str, float]]], clients: int) -> None:
    none, many = figures[0], figures[clients]
    for name, rows in (("no client", none), (f"{clients} clients", many)):
        agent = [r["agent"] * 1000 for r in rows]
        print(
            f"  {name:12} agent thread CPU median {median(agent):7.1f} ms "
            f"(min {min(agent):.1f}, max {max(agent):.1f}); broadcaster "
            f"{median([r['broadcast'] * 1000 for r in rows]):.1f} ms; whole process "
            f"{median([r['process'] * 1000 for r in rows]):.1f} ms; turn "
            f"{median([r['wall'] * 1000 for r in rows]):.1f} ms"
        )
    for name, rows in (("no client", none), (f"{clients} clients", many)):
        each = " ".join(f"{r['agent'] * 1000:.0f}" for r in rows)
        print(f"  {name:12} agent thread CPU by round (ms): {each}")
        print(
            f"  {name:12} agent thread context switches median "
            f"{median([r['switches'] for r in rows]):.0f}"
        )
    growth = median([r["agent"] for r in many]) / median([r["agent"] for r in none]) - 1
    # each round with clients against the rounds without on either side of it (the
    # machine's speed drifts; the rounds alternate)
    paired = [
        r["agent"] / statistics.mean(n["agent"] for n in none[max(0, k - 1) : k + 1])
        for k, r in enumerate(many)
    ]
    print(
        f"  agent thread CPU growth with {clients} clients: medians {growth:+.1%}; "
        f"paired with the rounds beside each, median {median(paired) - 1:+.1%}"
    )
    print(
        f"  clients: {sum(int(r['bad']) for r in many)} wrong streams in {len(many)} rounds; "
        f"frames per client median {median([r['frames'] for r in many]):.0f}; writer "
        f"threads' CPU {median([r['writers'] * 1000 for r in many]):.1f} ms; prompt → last "
        f"client complete {median([r['last_client'] * 1000 for r in many]):.1f} ms"
    )


# --- acp: start-up ------------------------------------------------------------------


SDK_AGENT = """
import asyncio
from typing import Any

from acp import run_agent
from acp.schema import InitializeResponse


class Minimal:
    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    def on_connect(self, conn: Any) -> None:
        pass


asyncio.run(run_agent(Minimal()))
"""
"""The smallest agent of the asyncio ACP SDK (`agent-client-protocol`, a test
dependency): it answers `initialize` and nothing else."""


def initialize(argv: list[str], env: dict[str, str], cwd: Path, new_session: bool) -> Spawned:
    """Spawn an ACP agent, write initialize (and session/new) at once: ms from spawn to
    the answer of the last request written, and the agent's VmHWM then."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}
    lines = [json.dumps(request)]
    if new_session:
        params = {"cwd": str(cwd), "mcpServers": []}
        lines.append(
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params})
        )
    data = ("\n".join(lines) + "\n").encode()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(data)
    proc.stdin.flush()
    for _ in lines:
        answer = json.loads(proc.stdout.readline())
        assert "result" in answer, answer
    elapsed = (time.perf_counter() - started) * 1000
    status = Path(f"/proc/{proc.pid}/status").read_text()
    peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
    proc.stdin.close()
    proc.wait(10)
    proc.stdout.close()
    return Spawned(elapsed, int(peak) / 1024)


class Spawned(NamedTuple):
    ms: float
    peak_mb: float


def version(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([EXE, "--version"], env=env, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def bench_acp(options: argparse.Namespace, root: Path) -> None:
    env = child_env(root)
    script = write_script(root / "acp.json", [["ok"]])
    workspace = root / "ws-acp"
    workspace.mkdir()
    acp = [EXE, "acp", "--script", str(script)]
    sdk = root / "sdk_agent.py"
    sdk.write_text(SDK_AGENT)
    for _ in range(3):  # bytecode caches
        version(env)
        initialize(acp, env, workspace, new_session=True)
        initialize([sys.executable, str(sdk)], env, workspace, new_session=False)
    print(f"acp: {options.runs} runs each, alternating, load {load()}")
    found: dict[str, list[Spawned]] = {"init": [], "new": [], "sdk": []}
    ver = []
    for _ in range(options.runs):
        ver.append(version(env))
        found["init"].append(initialize(acp, env, workspace, new_session=False))
        found["new"].append(initialize(acp, env, workspace, new_session=True))
        found["sdk"].append(initialize([sys.executable, str(sdk)], env, workspace, False))
    print(f"  {'codecoder --version (spawn → exit)':52} median {median(ver):6.1f} ms")
    for name, key in (
        ("codecoder acp: spawn → initialize answered", "init"),
        ("codecoder acp: spawn → session/new answered", "new"),
        ("asyncio ACP SDK, minimal agent: → initialize", "sdk"),
    ):
        ms = [s.ms for s in found[key]]
        print(
            f"  {name:52} median {median(ms):6.1f} ms   p90 {p90(ms):6.1f} ms   "
            f"VmHWM {median([s.peak_mb for s in found[key]]):.1f} MB"
        )
    print(f"  load after: {load()}")


# --- daemon children: attach and idle ------------------------------------------------------


class DaemonChild:
    def __init__(self, env: dict[str, str], script: Path) -> None:
        self.path = str(Path(env["XDG_RUNTIME_DIR"]) / "codecoder" / "daemon.sock")
        args = [EXE, "daemon", "--script", str(script), "--approval", "never-ask"]
        self.proc = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            try:
                Peer(self.path, timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the daemon did not start") from None
                time.sleep(0.02)

    def status(self) -> dict[str, str]:
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)

    def cpu_ticks(self) -> int:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime

    def switches(self) -> dict[str, int]:
        found = {}
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            status = (task / "status").read_text()
            found[task.name] = sum(
                int(line.split()[1]) for line in status.splitlines() if "ctxt_switches:" in line
            )
        return found

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


def drain(peer: Peer, done: threading.Event, request_id: int) -> None:
    """Read everything the daemon sends `peer` until the answer to `request_id`."""
    try:
        while True:
            message = peer.read()
            if message.get("id") == request_id and "method" not in message:
                break
    except (OSError, EOFError, ValueError):
        pass
    done.set()


def bench_attach(options: argparse.Namespace, root: Path) -> None:
    env = child_env(root)
    stream = {"token_delay": 0.002, "parts": [{"type": "text", "text": words(200_000)}]}
    script = write_script(root / "attach.json", [["The first turn."], stream])
    workspace = root / "ws-attach"
    workspace.mkdir()
    daemon = DaemonChild(env, script)
    try:
        driver = Peer(daemon.path)
        driver.call("initialize", INITIALIZE)
        session = driver.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = session["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
        driver.call("session/prompt", prompt)  # a finished turn: history to replay
        request_id = driver.send("session/prompt", prompt)
        done = threading.Event()
        reading = threading.Thread(target=drain, args=(driver, done, request_id))
        reading.start()
        time.sleep(1.0)  # well into the stream
        print(f"attach: {options.runs} attaches mid-stream, load {load()}")
        first, answered = [], []
        for _ in range(options.runs):
            started = time.perf_counter()
            peer = Peer(daemon.path)
            peer.call("initialize", INITIALIZE)
            attach = peer.send("_codecoder/session/attach", {"sessionId": session_id})
            seen_update = None
            while True:
                message = peer.read()
                now = time.perf_counter()
                if message.get("method") == "session/update" and seen_update is None:
                    seen_update = now
                if message.get("id") == attach:
                    answered.append((now - started) * 1000)
                    break
            if seen_update is None:  # the answer came first: wait for the first update
                while peer.read().get("method") != "session/update":
                    pass
                seen_update = time.perf_counter()
            first.append((seen_update - started) * 1000)
            peer.close()
            assert not done.is_set(), "the stream ended before the attaches did: lengthen it"
            time.sleep(0.1)
        for name, values in (
            ("connect → first session/update", first),
            ("connect → attach answered", answered),
        ):
            print(f"  {name:34} median {median(values):6.1f} ms   p90 {p90(values):6.1f} ms")
        rss = daemon.status()
        print(f"  the daemon meanwhile: VmRSS {rss['VmRSS'].strip()}, VmHWM {rss['VmHWM'].strip()}")
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
        driver.sock.sendall(json.dumps(cancel).encode() + b"\n")
        done.wait(10)
        reading.join(10)
        driver.close()
    finally:
        daemon.stop()


def bench_idle(options: argparse.Namespace, root: Path) -> None:
    env = child_env(root)
    script = write_script(root / "idle.json", [["Ready."]])
    workspace = root / "ws-idle"
    workspace.mkdir()
    daemon = DaemonChild(env, script)
    try:
        time.sleep(0.5)
        fresh = daemon.status()
        peer = Peer(daemon.path)
        peer.call("initialize", INITIALIZE)
        session = peer.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
        assert peer.call("session/prompt", prompt) == {"stopReason": "end_turn"}
        time.sleep(1.0)
        ticks, switches = daemon.cpu_ticks(), daemon.switches()
        time.sleep(options.idle)
        ticks_after, switches_after = daemon.cpu_ticks(), daemon.switches()
        status = daemon.status()
        woke = {
            tid: switches_after[tid] - count
            for tid, count in switches.items()
            if tid in switches_after and switches_after[tid] != count
        }
        print(f"idle: one session, one client attached, {options.idle:g} s, load {load()}")
        print(f"  before any session: VmRSS {fresh['VmRSS'].strip()}")
        print(
            f"  VmRSS {status['VmRSS'].strip()}, VmHWM {status['VmHWM'].strip()}, "
            f"threads {status['Threads'].strip()}"
        )
        print(f"  utime+stime over {options.idle:g} s: {ticks_after - ticks} ticks")
        print(f"  threads that woke: {woke or 'none'}")
        more = []
        for _ in range(options.clients):
            other = Peer(daemon.path)
            other.call("initialize", INITIALIZE)
            other.call("_codecoder/session/attach", {"sessionId": session["sessionId"]})
            more.append(other)
        time.sleep(0.5)
        status = daemon.status()
        print(
            f"  with {options.clients} more clients attached: VmRSS {status['VmRSS'].strip()}, "
            f"threads {status['Threads'].strip()}"
        )
        for other in [peer, *more]:
            other.close()
    finally:
        daemon.stop()


def main() -> None:
    if sys.argv[1:2] == ["_clients"]:
        clients_worker(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="stream,acp,attach,idle")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--token-delay", type=float, default=0.0, help="stream: seconds")
    parser.add_argument(
        "--window", type=float, help="stream: the session's COALESCE_WINDOW (0: none)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="stream rounds of each case")
    parser.add_argument("--runs", type=int, default=20, help="acp and attach runs")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle")
    parser.add_argument("--src", help="measure the codecoder package in this src/ folder")
    options = parser.parse_args()
    if options.src:
        global SRC
        SRC = str(Path(options.src).resolve())
        sys.path.insert(0, SRC)
    parts = {"stream": bench_stream, "acp": bench_acp, "attach": bench_attach, "idle": bench_idle}
    with tempfile.TemporaryDirectory(prefix="ccd-") as tmp:
        for name in options.only.split(","):
            folder = Path(tmp) / name
            folder.mkdir()
            parts[name](options, folder)


if __name__ == "__main__":
    main()
