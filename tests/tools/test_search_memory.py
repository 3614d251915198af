"""grep stops reading at the first match past max_results, inside a file as well as
between files (issue 32): a 19 MB file of matches, which a command or the model can
write, costs what a few hundred lines do. Each search runs in a child process whose peak
memory (and its own children's: ripgrep, the Python engine) is read with getrusage."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

RG = shutil.which("rg")
LINES = 9_500_000  # 19 MB of "a\n": under the 20 MiB that grep searches at most
CODE = """
import json, os, resource, sys, time
from pathlib import Path
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ToolContext
from codecoder.tools.search import Grep

workspace, rg, args = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
tool = Grep(rg_path=rg) if rg else Grep(use_rg=False)
ctx = ToolContext(call_id="c", cancel=CancelToken(), workspace=workspace, emit=lambda e: None)
started = time.monotonic()
result = tool.run(args, ctx)
seconds = time.monotonic() - started
try:
    os.waitpid(-1, os.WNOHANG)
    children_left = True
except ChildProcessError:
    children_left = False
# VmHWM, not RUSAGE_SELF: ru_maxrss keeps the high-water mark of the pytest process this
# one was forked from (across exec), hundreds of MB late in a whole-suite run
own = next(int(line.split()[1]) for line in open("/proc/self/status")
           if line.startswith("VmHWM:"))
peak = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"status": result.status, "text": result.text, "seconds": seconds,
                  "peak_mb": peak / 1024, "children_left": children_left}))
"""

ENGINES = [
    pytest.param(RG, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="no ripgrep")),
    pytest.param("", id="python"),
]


@pytest.fixture(scope="module")
def big_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "big.txt").write_bytes(b"a\n" * LINES)
    (workspace / "a_late_nul.dat").write_bytes(b"a\n" * LINES + b"\0\n")
    (workspace / "z.txt").write_bytes(b"a after the binary file\n")
    return workspace


def grep(workspace: Path, rg: str, **args: Any) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(workspace), rg, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("rg", ENGINES)
@pytest.mark.parametrize("context", [0, 2])
def test_a_file_of_matches_is_read_only_up_to_max_results(
    big_workspace: Path, rg: str, context: int
) -> None:
    found = grep(big_workspace, rg, pattern="a", path="big.txt", context=context)
    assert found["peak_mb"] < 200, found["peak_mb"]  # it was 1.2 GB with ripgrep
    assert found["seconds"] < 20, found["seconds"]
    assert not found["children_left"]  # ripgrep, killed mid-file, was reaped
    lines = found["text"].splitlines()
    assert lines[:-1] == [f"big.txt:{n}:a" for n in range(1, 201)]
    assert lines[-1] == (
        "[showing the first 200 matching lines; there are more. "
        "Narrow the pattern, path or glob, or raise max_results.]"
    )


@pytest.mark.skipif(RG is None, reason="no ripgrep")
def test_a_file_left_mid_way_that_turns_out_binary_is_dropped_whole(big_workspace: Path) -> None:
    """ripgrep finds a late NUL only when it reaches it, and then drops the file: a file
    it was stopped in is checked, and the engines agree that it is never searched."""
    assert RG is not None
    by_rg = grep(big_workspace, RG, pattern="^a", max_results=5)
    assert by_rg["peak_mb"] < 200, by_rg["peak_mb"]
    assert by_rg["seconds"] < 20, by_rg["seconds"]
    lines = by_rg["text"].splitlines()
    assert not [line for line in lines if line.startswith("a_late_nul.dat")]
    assert lines[:5] == [f"big.txt:{n}:a" for n in range(1, 6)]
    by_python = grep(big_workspace, "", pattern="^a", max_results=5)
    assert by_python["text"] == by_rg["text"]
