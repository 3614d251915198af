"""`codecoder` leaves through `os._exit` (cli.main.run): what must still hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUN = "import sys, codecoder.cli.main as m; sys.argv[1:] = ['--version']; "


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
    )


def test_buffered_output_is_flushed_into_a_pipe() -> None:
    # a pipe makes stdout block-buffered: without the flush, os._exit would lose the line
    result = run_python(RUN + "print('kept', end=''); m.run()")
    assert result.returncode == 0
    assert result.stdout.startswith("keptcodecoder ")


def test_a_running_non_daemon_thread_gets_the_normal_exit(tmp_path: Path) -> None:
    marker = tmp_path / "written"
    code = (
        "import threading, time, pathlib;"
        f"t = threading.Thread(target=lambda: (time.sleep(0.3), pathlib.Path({str(marker)!r})"
        ".write_text('done')));"
        "t.start();" + RUN + "m.run()"
    )
    result = run_python(code)
    assert result.returncode == 0
    assert marker.read_text() == "done"  # the interpreter waited for the thread's work


def test_the_interpreter_teardown_is_skipped() -> None:
    code = "import atexit; atexit.register(print, 'teardown');" + RUN + "m.run()"
    result = run_python(code)
    assert result.returncode == 0
    assert result.stdout.startswith("codecoder ") and "teardown" not in result.stdout


@pytest.mark.parametrize("closed", ["1", "2"])
def test_a_closed_standard_stream_is_no_failure(closed: str) -> None:
    """Started with stdout or stderr closed (`>&-`): sys.stdout is None, nothing to flush."""
    code = RUN + "m.run()"
    result = subprocess.run(
        ["sh", "-c", f'exec "$0" -c "$1" {closed}>&-', sys.executable, code],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
