"""An MCP server's tool as the terminal client shows it: its approval names the server
and the tool once, with its arguments a line each; its result line shows the result's
text, not the first line of pretty-printed JSON."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codecoder.cli.tui import describe
from codecoder.mcp import tools
from tests.cli.test_tui import ARM, call, start
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "lookup.py"


def codecoder(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codecoder", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_mcp_tools_approval_and_result_read_as_text(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    added = codecoder("mcp", "add", "records", "--", sys.executable, SERVER)
    assert added.returncode == 0, added.stderr
    # once listed, its tools are offered from a session's first request on
    assert "records  ready" in codecoder("mcp", "list", "-C", tmp_path).stdout
    lookup = call("mcp__records__lookup", query="open invoices", limit=3)
    term = start(terminals, tmp_path, [[lookup], ["Two found."]])
    term.line("find the open invoices")
    term.wait_for("Allow it?")
    shown = term.text()
    assert "? records · lookup (MCP)" in shown
    assert shown.count("? records · lookup") == 1 and "(mcp__records__lookup)" not in shown
    assert "  query: open invoices" in shown and "  limit: 3" in shown
    term.settle(ARM)
    term.send("y")
    term.wait_for("Two found.")
    shown = term.text()
    done = next(line for line in shown.splitlines() if line.startswith("✓ records · lookup"))
    assert '· {"found": 2, "records": ["alpha", "beta"]' in done, done
    assert "(+" not in done


def test_the_clients_mcp_prefix_is_the_mcp_clients() -> None:
    """describe.py writes the prefix out so that the client's start-up imports no MCP
    module; the two must not drift apart."""
    assert describe.MCP_PREFIX == tools.PREFIX
