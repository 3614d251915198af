"""`codecoder doctor` as a person runs it: it judges what is in use (the default model's
provider, the MCP servers a session here starts, the daemon) and lists the rest as off,
without failing for it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.permissions import trust
from tests.fakes.wire_server import WireServer

pytestmark = pytest.mark.timeout(120)

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "lookup.py"
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY")


def doctor(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in KEYS}
    return subprocess.run(
        [sys.executable, "-m", "codecoder", "doctor", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=cwd,
        env={**clean, **env},
        check=False,
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rows(out: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in out.splitlines():
        mark, _, rest = line.partition(" ")
        words = rest.split()
        name = " ".join(words[:2]) if words[:1] == ["mcp"] else words[0]
        found[name] = f"{mark} {rest.strip()}"
    return found


def test_doctor_fails_only_for_what_is_in_use(tmp_path: Path) -> None:
    config = paths.config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    with WireServer() as server:
        config.write_text(
            'model = "fake/model"\n'
            f'[providers.fake]\nbase_url = "{server.url}/v1"\n'
            f'[providers.ollama]\nbase_url = "http://127.0.0.1:{closed_port()}/v1"\n'
            f'[providers.deepseek]\nbase_url = "http://127.0.0.1:{closed_port()}"\n'
            f'[mcp.servers.records]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        )
        done = doctor(tmp_path, DEEPSEEK_API_KEY="sk-x")  # set for another tool; down
        shown = rows(done.stdout)
        assert done.returncode == 0, done.stdout + done.stderr
        assert shown["fake"].startswith("ok")
        assert shown["ollama"].startswith("off") and "(not in use)" in shown["ollama"]
        assert shown["deepseek"].startswith("off") and "unreachable" in shown["deepseek"]
        assert shown["mcp records"].startswith("ok") and "ready, 1 tool" in shown["mcp records"]
        assert shown["daemon"].startswith("off") and "not running" in shown["daemon"]
        with config.open("a") as more:  # a server every session starts, which cannot start
            more.write(
                f'[mcp.servers.broken]\ncommand = "{sys.executable}"\n'
                'args = ["-c", "import sys; sys.exit(3)"]\n'
            )
        project = tmp_path / ".codecoder" / "config.toml"  # not approved: never started
        project.parent.mkdir()
        project.write_text('[mcp.servers.theirs]\ncommand = "touch"\nargs = ["started"]\n')
        trust(tmp_path)
        done = doctor(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    shown = rows(done.stdout)
    assert shown["mcp broken"].startswith("FAIL"), done.stdout
    assert shown["mcp records"].startswith("ok")
    assert shown["mcp theirs"].startswith("off") and "codecoder mcp approve theirs" in done.stdout
    assert not (tmp_path / "started").exists()
