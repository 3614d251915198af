"""A small filesystem for the data folder, so that a full disk is real: a tmpfs of a few
megabytes mounted for one test and unmounted after it, whatever the test did.

Mounting needs root (CI's Debian machine runs the suite as root, as does the dev
container). Without it the test is skipped, with the reason: a bwrap tmpfs (`--size`)
exists only inside bwrap's own mount namespace, where the CLI processes a test starts
and the test's own checks would all have to run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(folder: Path, size: int) -> Iterator[Path]:
    """`folder` (made here) as a tmpfs of `size` bytes, until the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for a full disk needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def used(folder: Path) -> int:
    """Bytes of the files under `folder`."""
    return sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file())
