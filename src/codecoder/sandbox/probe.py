"""Does bubblewrap work here, and if not, why not.

The only reliable test is to run it: bwrap may be installed and still fail (user
namespaces switched off by a sysctl, restricted by AppArmor on Ubuntu 24.04+, refused by
a container's seccomp profile). So the probe runs `bwrap` with the namespaces and mounts
a real command gets, on `true`, and turns its failure into one line that says what to do.

Probed once per process and bwrap path (~5-15 ms, the cost of one sandboxed `true`), at
the first command that needs it, never at start-up of a run that runs no command.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from codecoder.boundary import host_program
from codecoder.sandbox import SandboxUnavailable

PROBE_TIMEOUT = 10.0

_NO_USERNS = (
    "no permissions to creating new namespace",
    "creating new namespace failed",
    "setting up uid map",
    "no permissions to create new namespace",
    "operation not permitted",
)


class Probe(msgspec.Struct, frozen=True):
    """`works`: bwrap ran a confined `true`; `detail`: why not, or which bwrap."""

    works: bool
    detail: str
    path: str | None = None


def probe(bwrap: str | None = None) -> Probe:
    """Whether `bwrap` (default: `find()`'s) can confine a command here. Cached for the
    life of the process (`forget` clears it)."""
    return _probe(bwrap or find(()))


def checked(path: str | None) -> Probe:
    """Whether the bwrap at `path` can confine a command here; None: there is none
    (cached like `probe`)."""
    return _probe(path)


def find(roots: Sequence[Path]) -> str | None:
    """The bwrap on PATH outside `roots` (the folders commands may write: a `bwrap`
    planted in a `.venv/bin` on PATH would "confine" every later command) and outside
    relative entries."""
    return host_program("bwrap", roots)


def forget() -> None:
    """Probe again next time (after installing bwrap; tests)."""
    _probe.cache_clear()


def require(roots: Sequence[Path] = ()) -> str:
    """The path of a bwrap outside `roots` that works; SandboxUnavailable saying why
    otherwise."""
    found = checked(find(roots))
    if not found.works or found.path is None:
        raise SandboxUnavailable(found.detail)
    return found.path


def version(path: str) -> str | None:
    """`bwrap --version`'s answer ("bubblewrap 0.8.0"), for `codecoder doctor`."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


@functools.cache
def _probe(path: str | None) -> Probe:
    if not sys.platform.startswith("linux"):
        return Probe(False, f"bubblewrap needs Linux (this is {sys.platform})")
    if path is None:
        return Probe(
            False,
            "bwrap is not installed (Debian/Ubuntu: apt install bubblewrap; "
            "Fedora: dnf install bubblewrap)",
        )
    from codecoder.sandbox.bwrap import probe_argv

    try:
        done = subprocess.run(
            probe_argv(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Probe(False, f"{path} did not finish within {PROBE_TIMEOUT:g} s", path)
    except OSError as exc:
        return Probe(False, f"cannot run {path}: {exc.strerror or exc}", path)
    if done.returncode == 0:
        return Probe(True, f"{path} confines commands", path)
    return Probe(False, _why(path, done.stderr), path)


def _why(path: str, stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = lines[-1] if lines else "it failed without a message"
    if any(marker in said.lower() for marker in _NO_USERNS):
        return f"{path} cannot create namespaces here ({said}); {_userns_advice()}"
    return f"{path} failed: {said}"


def _userns_advice() -> str:
    """What to change, from what the kernel says about user namespaces."""
    switches = {
        "/proc/sys/kernel/unprivileged_userns_clone": "sysctl kernel.unprivileged_userns_clone=1",
        "/proc/sys/user/max_user_namespaces": "sysctl user.max_user_namespaces=15000",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": (
            "an AppArmor profile for bwrap, or sysctl "
            "kernel.apparmor_restrict_unprivileged_userns=0"
        ),
    }
    for name, fix in switches.items():
        try:
            with open(name) as handle:
                value = handle.read().strip()
        except OSError:
            continue
        blocked = value == "1" if "apparmor" in name else value == "0"
        if blocked:
            return f"{os.path.basename(name)} is {value}: {fix}"
    return "in a container, allow user namespaces (e.g. an unconfined seccomp profile)"
