"""A session's broadcaster against a model that streams one token at a time: the tokens
reach the client whole and in order, in far fewer frames than tokens."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemon, write_script

pytestmark = pytest.mark.timeout(60)


def test_a_paced_stream_is_coalesced_into_few_frames(tmp_path: Path) -> None:
    """Every token is 1 ms behind the last, so none is ever queued behind another: the
    broadcaster made one frame per token (300 here), for every client. It now waits up
    to COALESCE_WINDOW (10 ms) for the tokens behind one: ~30 frames."""
    text = "".join(f"w{i} " for i in range(300))
    reply = {"token_delay": 0.001, "parts": [{"type": "text", "text": text}]}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    daemon = Daemon(write_script(tmp_path, [reply]), "--approval", "never-ask")
    try:
        with daemon.client() as client:
            new = client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
            params = {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "go"}]}
            assert client.call("session/prompt", params) == {"stopReason": "end_turn"}
            chunks: list[str] = []
            deadline = time.monotonic() + 10
            while "".join(chunks) != text and time.monotonic() < deadline:
                method, message = client.next_message(10)
                update = message["update"] if method == "session/update" else {}
                if update.get("sessionUpdate") == "agent_message_chunk":
                    chunks.append(update["content"]["text"])
        assert "".join(chunks) == text
        assert len(chunks) <= 100, f"{len(chunks)} frames for 300 tokens"
    finally:
        daemon.stop()
