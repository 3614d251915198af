"""Node packages the tests drive (the MCP reference server, the official ACP client),
pinned by a package-lock.json in the tests: where CI installed them in place (.ci/run)
they are used there, else installed once into pytest's cache folder, in a folder named
by the lock's hash. Without node or npm, or when `npm ci` fails (offline), the test is
skipped and says why."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest


def installed(
    request: pytest.FixtureRequest,
    source: Path,
    marker: Path,
    *,
    what: str,
    files: tuple[str, ...] = ("package.json", "package-lock.json"),
    timeout: float = 300,
) -> Path:
    """The folder holding `source`'s packages installed: `source` itself when `marker`
    (a path inside the folder) is there, else a cached copy with `files`."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are needed for {what}")
    if (source / marker).is_file():
        return source
    lock = (source / "package-lock.json").read_bytes()
    name = f"node-{source.parent.name}-{source.name}-{hashlib.sha256(lock).hexdigest()[:16]}"
    folder = Path(request.config.cache.mkdir(name))
    for file in files:
        shutil.copyfile(source / file, folder / file)
    if (folder / marker).is_file():
        return folder
    try:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--fetch-retries=1"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm ci took more than {timeout:.0f} s (offline?): {what} is absent")
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "log of this run" not in line]
        reason = " / ".join(lines[:2]) or f"exit status {done.returncode}"
        pytest.skip(f"npm ci failed (offline?), {what} is absent: {reason}")
    return folder
