"""A real ACP client we did not write: the official TypeScript SDK
(`@agentclientprotocol/sdk`, pinned in tests/daemon/node/package-lock.json) spawns
`codecoder acp` and drives a prompt turn with a tool call and a permission request,
then a cancelled turn (tests/daemon/node/client.mjs). The SDK checks what it receives
against its own zod schema, so an update it refused would be missing from its summary.

The SDK comes from `npm ci` in tests/daemon/node (CI does it, see .ci/run) or, failing
that, from pytest's cache folder (tests/node_packages.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.acp_peer import write_script
from tests.node_packages import installed

pytestmark = pytest.mark.timeout(120)

NODE_DIR = Path(__file__).resolve().parent / "node"
FILES = ("package.json", "package-lock.json", "client.mjs")
SDK = Path("node_modules") / "@agentclientprotocol" / "sdk" / "package.json"


@pytest.fixture(scope="session")
def node_client(request: pytest.FixtureRequest) -> Path:
    """The folder to run client.mjs in, its SDK installed; skips when that cannot be."""
    return installed(request, NODE_DIR, SDK, what="the official TypeScript ACP client", files=FILES)


def test_the_official_typescript_client_drives_a_turn_and_a_cancel(
    node_client: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = write_script(
        tmp_path / "script.json",
        [
            "Making it.",
            {"type": "tool_call", "name": "run_command", "args": {"command": "mkdir build"}},
        ],
        ["Done."],
        {"parts": [{"type": "text", "text": "Working"}, {"type": "sleep", "seconds": 60}]},
    )
    env = {**os.environ, "CODECODER_PYTHON": sys.executable}
    done = subprocess.run(
        ["node", str(node_client / "client.mjs"), str(script), str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in summary, summary["error"]
    assert summary["protocolVersion"] == 1
    assert summary["agentName"] == "codecoder"
    assert summary["modes"] == ["ask", "auto-edit", "full-auto", "read-only", "never-ask"]

    (permission,) = summary["permissions"]
    assert permission["turn"] == 1
    assert permission["toolCallId"] == "call_0_1"
    assert permission["title"] == "mkdir build"
    assert permission["kind"] == "execute"
    assert "allow_once:allow_once" in permission["options"]
    assert "deny_session:reject_always" in permission["options"]
    assert (workspace / "build").is_dir()  # the answer went into the reply oneshot

    first = [(u["kind"], u.get("status")) for u in summary["updates"] if u["turn"] == 1]
    assert first == [
        ("agent_message_chunk", None),
        ("tool_call", "in_progress"),
        ("tool_call_update", "completed"),
        ("agent_message_chunk", None),
    ]
    second = [u for u in summary["updates"] if u["turn"] == 2]
    assert [u.get("text") for u in second] == ["Working"]

    assert summary["stops"] == ["end_turn", "cancelled"]
    assert summary["cancelMs"] < 1000
    assert summary["exitCode"] == 0  # the agent ended when the client closed its stdin
    assert set(summary["extensions"]) <= {"_codecoder/status", "_codecoder/usage"}
