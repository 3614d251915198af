"""A server's tool list is capped as it comes in (entry.py), so neither `codecoder mcp
list` nor any later start (which reads the tool cache) pays for what a server sends
(issue 32): 10 pages of one tool with a 20 MB description each were kept whole, written
to mcp-tools.json and read back by every `exec`. Peak memory is the codecoder process's
own (getrusage when it exits), not its server's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.mcp.cache import MAX_FILE_BYTES
from codecoder.mcp.entry import MAX_DESCRIPTION, MAX_TOOLS

pytestmark = pytest.mark.timeout(300)
CLI = [sys.executable, "-m", "codecoder"]
SERVER = Path(__file__).resolve().parent / "servers" / "many_tools.py"
# codecoder ends with os._exit (no atexit): report the peak from there. VmHWM, not
# RUSAGE_SELF: ru_maxrss keeps the high-water mark of the pytest process this one was
# forked from (across exec), hundreds of MB late in a whole-suite run.
CODE = """
import os, sys
_exit = os._exit
def report(code):
    with open("/proc/self/status") as status:
        peak = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:"))
    os.write(2, b"PEAK_KB %d\\n" % peak)
    _exit(code)
os._exit = report
sys.argv = ["codecoder", *sys.argv[1:]]
from codecoder.cli.main import run
run()
"""


def codecoder(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """The run, and its peak memory in MB."""
    done = subprocess.run(
        [sys.executable, "-c", CODE, *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    peak = re.search(r"PEAK_KB (\d+)", done.stderr)
    assert peak is not None, done.stderr[-2000:]
    return done, int(peak.group(1)) / 1024


def cache_file() -> Path:
    return paths.data_dir() / "mcp-tools.json"


def add_server(*args: str) -> None:
    added = subprocess.run(
        [*CLI, "mcp", "add", "many", "--", sys.executable, str(SERVER), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert added.returncode == 0, added.stderr


def exec_start(workspace: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    script = workspace.parent / "script.json"
    script.write_text(json.dumps([["done"]]))
    return codecoder("exec", "--script", str(script), "-C", str(workspace), "go")


def test_huge_descriptions_are_capped_before_they_are_kept_or_cached(tmp_path: Path) -> None:
    add_server("10", "1", str(20_000_000), "plain")
    listed, peak = codecoder("mcp", "list", "-C", str(tmp_path))
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "many  ready" in listed.stdout
    assert "mcp__many__t9_0" in listed.stdout  # every page was read
    assert peak < 400, peak  # one page at a time (a 20 MB line, parsed), not all of them
    assert cache_file().stat().st_size < 10 * (MAX_DESCRIPTION + 200)  # it was 200 MB
    tools = json.loads(cache_file().read_bytes())["servers"]
    (kept,) = tools.values()
    assert [len(tool["description"]) for tool in kept] == [MAX_DESCRIPTION] * 10
    started, peak = exec_start(tmp_path)
    assert started.returncode == 0, started.stderr[-2000:]
    assert peak < 200, peak  # it read the 200 MB cache


def test_the_number_of_tools_and_their_schemas_depth_are_capped(tmp_path: Path) -> None:
    add_server("3", "400", "4000", "deep")
    listed, _ = codecoder("mcp", "list", "-C", str(tmp_path))
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "mcp__many__t1_99" in listed.stdout and "mcp__many__t1_100" not in listed.stdout
    (kept,) = json.loads(cache_file().read_bytes())["servers"].values()
    assert len(kept) == MAX_TOOLS  # it was 1,200
    assert {json.dumps(tool["schema"]) for tool in kept} == {
        '{"type": "object", "additionalProperties": true}'
    }


def test_a_cache_file_over_its_cap_is_ignored_unread(tmp_path: Path) -> None:
    add_server("1", "1", "10", "plain")
    cache_file().parent.mkdir(parents=True, exist_ok=True)
    with open(cache_file(), "wb") as handle:  # sparse: 2 GB that take no disk
        handle.write(b'{"servers": {')
        handle.truncate(2 << 30)
    started, peak = exec_start(tmp_path)
    assert started.returncode == 0, started.stderr[-2000:]
    assert peak < 200, peak
    assert f"over the {MAX_FILE_BYTES:,} it may hold" in started.stderr
    listed, peak = codecoder("mcp", "list", "-C", str(tmp_path))
    assert listed.returncode == 0 and peak < 200, (peak, listed.stderr[-2000:])
    assert os.path.getsize(cache_file()) < 1000  # the server's start rewrote it
