"""RemoteAgent (the terminal client's view of a daemon session) against a fake daemon on
a real socket: the events of a turn arrive in the order the daemon sent them."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.daemon.client import DaemonClient, RemoteAgent
from codecoder.kernel.events import Done, NewToken

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def fake_daemon(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """Answers one session/prompt with many agent_message_chunk updates and then the
    prompt's answer, all in one write (as a daemon does when a client is behind)."""
    path = tmp_path / "d.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    chunks = [f"t{i} " for i in range(5000)]

    def serve() -> None:
        sock, _ = listener.accept()
        with sock, sock.makefile("rb") as reader:
            request = json.loads(reader.readline())
            assert request["method"] == "session/prompt"
            frames = [
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": "s1",
                        "update": {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": chunk},
                        },
                    },
                }
                for chunk in chunks
            ]
            frames.append(
                {"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": "end_turn"}}
            )
            sock.sendall(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
            reader.readline()  # until the client leaves

    thread = threading.Thread(target=serve)
    thread.start()
    yield path, chunks
    thread.join(10)
    listener.close()


def test_the_answer_to_a_prompt_comes_after_the_updates_before_it(
    fake_daemon: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """The answer (Done) went straight to the events from the connection's reader thread
    while updates went through a second thread: Done could overtake the turn's text, and
    the terminal client ended the turn without it."""
    path, chunks = fake_daemon
    agent = RemoteAgent(DaemonClient(path), "s1", tmp_path)
    try:
        agent.send("go")
        text = []
        while not isinstance(event := agent.next_event(10), Done):
            if isinstance(event, NewToken):
                text.append(event.text)
        assert "".join(text) == "".join(chunks)
    finally:
        agent.client.close()
        agent._pump.join(5)
