"""`codecoder daemon` on its Unix socket, as a real process: the socket's modes, other
users refused, malformed frames, two clients on one session, a client that leaves and
comes back, SIGTERM in the middle of a turn, and the session afterwards."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from codecoder.daemon.client import DaemonClient
from codecoder.sessions import SessionStore
from tests.daemon.helpers import Daemon, write_script
from tests.procfs import alive

pytestmark = pytest.mark.timeout(60)

CLI = [sys.executable, "-m", "codecoder"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def start(workspace: Path) -> Iterator[Any]:
    daemons: list[Daemon] = []
    clients: list[DaemonClient] = []

    def run(replies: list[Any], *extra: str) -> tuple[Daemon, Any]:
        daemon = Daemon(write_script(workspace.parent, replies), *extra)
        daemons.append(daemon)

        def connect() -> DaemonClient:
            client = daemon.client()
            clients.append(client)
            return client

        return daemon, connect

    yield run
    for client in clients:
        client.close()
    for daemon in daemons:
        daemon.stop()


Message = tuple[str, Any]


def messages_until(
    client: DaemonClient, done: Callable[[list[Message]], bool], timeout: float = 15
) -> list[Message]:
    """The messages a client receives, until `done(all so far)` holds."""
    seen: list[Message] = []
    deadline = time.monotonic() + timeout
    while True:
        seen.append(client.next_message(max(0.1, deadline - time.monotonic())))
        if done(seen):
            return seen


def last_is(method: str) -> Callable[[list[Message]], bool]:
    return lambda seen: seen[-1][0] == method


def says(text: str) -> Callable[[list[Message]], bool]:
    return lambda seen: text in chunks(seen)


def chunks(seen: list[tuple[str, Any]]) -> str:
    return "".join(
        params["update"]["content"]["text"]
        for method, params in seen
        if method == "session/update" and params["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def new_session(client: DaemonClient, workspace: Path) -> str:
    return str(client.call("session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"])


def prompt(client: DaemonClient, session_id: str, text: str, answers: list[Any]) -> None:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    client.call_async(
        "session/prompt", params, lambda result, error: answers.append((result, error))
    )


# --- the socket ---------------------------------------------------------------------------


def test_the_folder_is_private_and_the_socket_is_ours(start: Any) -> None:
    daemon, _ = start([["hi"]])
    folder = daemon.socket.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    info = daemon.socket.stat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.getuid()
    assert len(os.fsencode(daemon.socket)) < 108


CONNECT_AS_NOBODY = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print("refused:", exc.errno); sys.exit(0)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\\n')
    s.settimeout(5)
    data = s.recv(65536)
except OSError as exc:
    data = b""
print("answer:" if data else "closed", data[:80])
"""


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")
"""A Python another user may run (the venv's lives under root's home)."""


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to start a process as another user")
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system python3 for the other user")
def test_another_user_is_refused(start: Any) -> None:
    daemon, _ = start([["hi"]])

    def as_nobody() -> str:
        done = subprocess.run(
            [str(SYSTEM_PYTHON), "-c", CONNECT_AS_NOBODY, str(daemon.socket)],
            user=65534,
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            check=True,
        )
        return done.stdout.strip()

    assert as_nobody().startswith("refused")  # the folder's mode stops it first
    # Open the folder and the socket to everyone: the peer check must still refuse.
    os.chmod(daemon.socket, 0o666)
    for folder in daemon.socket.parents:
        if folder == Path("/tmp"):
            break
        os.chmod(folder, 0o755)
    assert as_nobody().startswith("closed")


def test_a_daemon_never_starts_twice_and_replaces_a_dead_ones_socket(
    start: Any, workspace: Path
) -> None:
    folder = paths.daemon_socket().parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(paths.daemon_socket()))  # a socket file nobody listens on
    dead.close()
    daemon, connect = start([["hi"]])
    assert connect().call("_codecoder/sessions/list", {})["sessions"] == []
    second = subprocess.run(
        [*CLI, "daemon"], capture_output=True, text=True, timeout=30, check=False
    )
    assert second.returncode == 1
    assert "already running" in second.stderr
    assert daemon.proc.poll() is None


def test_malformed_frames_get_errors_and_the_connection_goes_on(start: Any) -> None:
    daemon, _ = start([["hi"]])
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(daemon.socket))
    reader = sock.makefile("rb")
    try:
        frames = [
            b"{not json\n",
            b"[1, 2]\n",
            b'{"jsonrpc": "2.0", "id": 7, "method": "no/such"}\n',
            b'{"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": 3}}\n',
            b'{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": "x"}\n',
            b"x" * (8 * 1024 * 1024 + 10) + b"\n",
            b'{"jsonrpc": "2.0", "id": 10, "method": "initialize",'
            b' "params": {"protocolVersion": 1}}\n',
        ]
        for frame in frames:
            sock.sendall(frame)
        answers = [json.loads(reader.readline()) for _ in frames]
    finally:
        reader.close()
        sock.close()
    codes = [a.get("error", {}).get("code") for a in answers]
    assert codes == [-32700, -32600, -32601, -32602, -32602, -32600, None]
    assert answers[2]["id"] == 7
    assert answers[-1]["result"]["protocolVersion"] == 1


# --- several clients ------------------------------------------------------------------------

ASKS = [
    [{"type": "tool_call", "name": "run_command", "args": {"command": "echo ran >> once.txt"}}],
    ["finished"],
]


def test_two_clients_one_question_the_first_answer_wins(start: Any, workspace: Path) -> None:
    _, connect = start(ASKS)
    first, second = connect(), connect()
    session_id = new_session(first, workspace)
    second.call("_codecoder/session/attach", {"sessionId": session_id})
    answers: list[Any] = []
    prompt(first, session_id, "go", answers)

    def permission(seen: list[Message]) -> bool:
        method, params = seen[-1]
        return method == "__request__" and params[1] == "session/request_permission"

    asked_first = messages_until(first, permission)[-1][1]
    asked_second = messages_until(second, permission)[-1][1]
    second.conn.respond(
        asked_second[0], {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    )
    seen = messages_until(first, last_is("_codecoder/request_resolved"))
    assert seen[-1][1]["toolCallId"] == asked_first[2]["toolCall"]["toolCallId"]
    first.conn.respond(asked_first[0], {"outcome": {"outcome": "selected", "optionId": "deny"}})
    deadline = time.monotonic() + 15
    while not answers and time.monotonic() < deadline:
        time.sleep(0.02)
    assert answers and answers[0][0] == {"stopReason": "end_turn"}
    assert (workspace / "once.txt").read_text() == "ran\n"
    messages_until(second, says("finished"))


def test_a_client_that_leaves_comes_back_to_the_whole_turn(start: Any, workspace: Path) -> None:
    text = "".join(f"word{i} " for i in range(300))
    reply = {"token_delay": 0.005, "parts": [{"type": "text", "text": text}]}
    _, connect = start([reply])
    first = connect()
    session_id = new_session(first, workspace)
    answers: list[Any] = []
    prompt(first, session_id, "go", answers)
    messages_until(first, last_is("session/update"))
    first.close()  # gone mid-turn; the session goes on
    time.sleep(0.2)
    second = connect()
    second.call("_codecoder/session/attach", {"sessionId": session_id})
    seen = messages_until(second, says(text))
    user = [
        p
        for m, p in seen
        if m == "session/update" and p["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert [u["update"]["content"]["text"] for u in user] == ["go"]
    assert chunks(seen) == text
    listed = second.call("_codecoder/sessions/list", {})["sessions"]
    assert [s["sessionId"] for s in listed] == [session_id]


def test_a_question_with_nobody_attached_is_denied_after_the_timeout(
    start: Any, workspace: Path
) -> None:
    _, connect = start(ASKS, "--answer-timeout", "0.5")
    client = connect()
    session_id = new_session(client, workspace)
    prompt(client, session_id, "go", [])
    messages_until(client, last_is("__request__"))
    client.close()  # killed while the question waits
    time.sleep(1.5)
    again = connect()
    again.call("_codecoder/session/attach", {"sessionId": session_id})
    seen = messages_until(again, says("finished"))
    failed = [
        p["update"]
        for m, p in seen
        if m == "session/update" and p["update"].get("status") == "failed"
    ]
    assert failed and "nobody was attached" in json.dumps(failed)
    assert not (workspace / "once.txt").exists()


# --- stopping ---------------------------------------------------------------------------------


def test_sigterm_mid_turn_stops_cleanly_and_the_session_can_go_on(
    start: Any, workspace: Path
) -> None:
    pidfile = workspace / "pids"
    command = "echo $$ > pids; sleep 300"
    replies = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": command}}],
        ["never"],
        ["second turn"],
    ]
    # unconfined: `$$` inside the sandbox's pid namespace is no host pid
    daemon, connect = start(replies, "--approval", "full-auto", "--sandbox", "off")
    client = connect()
    session_id = new_session(client, workspace)
    prompt(client, session_id, "go", [])
    deadline = time.monotonic() + 15
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    shell = int(pidfile.read_text())
    client.close()
    assert daemon.stop() == 0
    assert not alive(shell)
    assert not daemon.socket.exists()
    with SessionStore() as store:
        stored = store.load_messages(session_id)
    assert stored[0].text == "go"
    assert stored[-1].role == "tool"  # the cut-off call got its (cancelled) result

    _, connect_again = start([["after the restart"]])
    client = connect_again()
    client.call("session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
    answers: list[Any] = []
    prompt(client, session_id, "go on", answers)
    seen = messages_until(client, says("after the restart"))
    replayed = [
        p["update"]["content"]["text"]
        for m, p in seen
        if m == "session/update" and p["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert replayed[0] == "go"
