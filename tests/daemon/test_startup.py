"""What `codecoder acp` loads before it answers `initialize` (an editor waits for that
answer: docs/benchmarks.md, "Daemon"), the quick parser of `acp` and `daemon`, and a
connection whose input ends at once."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from codecoder.cli.main import main
from codecoder.daemon.rpc import Connection, notification
from tests.daemon.helpers import ClosingHandler

pytestmark = pytest.mark.timeout(60)

SESSION_MACHINERY = (
    "msgspec",
    "codecoder.kernel",
    "codecoder.permissions",
    "codecoder.app",
    "codecoder.sessions",
    "codecoder.providers",
    "codecoder.tools",
    "codecoder.daemon.session",
    "codecoder.daemon.acp",
    "codecoder.cli.commands",
)


def test_acp_answers_initialize_without_loading_a_session() -> None:
    """Every module the process imports, up to its exit once stdin closes after
    `initialize`: none of what a session needs (that loads at session/new)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codecoder", "acp"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(proc.stdout)
    assert answer["result"]["protocolVersion"] == 1
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "codecoder.daemon.handler" in imported
    heavy = sorted(
        m for m in imported if any(m == p or m.startswith(f"{p}.") for p in SESSION_MACHINERY)
    )
    assert not heavy, f"imported before any session: {heavy}"


def test_acp_ends_when_its_input_is_closed_at_once() -> None:
    """The reader met end-of-file before the writer thread had started and died joining
    it: `codecoder acp < /dev/null` never exited."""
    proc = subprocess.run(
        [sys.executable, "-m", "codecoder", "acp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stdout == b""


def test_a_connection_whose_input_is_empty_closes_and_says_so() -> None:
    for _ in range(20):  # the reader may win the race to run first
        handler = ClosingHandler()
        conn = Connection(io.BytesIO(b""), lambda frame: None, handler)
        conn.start()
        assert handler.closed.wait(5), "on_close was never called"
        conn.join(5)
        assert conn.closed


def test_a_deeply_nested_frame_is_a_parse_error_and_the_connection_stays() -> None:
    frames: list[bytes] = []
    handler = ClosingHandler()
    lines = b"[" * 100_000 + b"\n" + b'{"jsonrpc": "2.0", "method": "x"}\n'
    conn = Connection(io.BytesIO(lines), frames.append, handler)
    conn.start()
    assert handler.closed.wait(5)
    conn.join(5)
    errors = [json.loads(frame) for frame in b"".join(frames).splitlines()]
    assert [e["error"]["code"] for e in errors] == [-32700]


def test_a_session_frame_is_the_bytes_rpc_would_send() -> None:
    from codecoder.daemon.session import _notification

    params = {
        "sessionId": "s1",
        "update": {"content": {"type": "text", "text": 'héllo "wörld"\n\t\x01\u2028 ✓'}},
    }
    assert _notification("session/update", params) == notification("session/update", params)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["acp", "--aproval", "ask"], "did you mean --approval?"),
        (["daemon", "--aproval", "ask"], "did you mean --approval?"),
        (["acp", "--approval", "asc"], "did you mean ask?"),
    ],
)
def test_the_quick_parser_leaves_mistakes_to_the_whole_one(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err
