"""Where CodeCoder keeps its files (DESIGN.md §7), resolved from the XDG variables at call
time so that tests (and users) can point them elsewhere."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/codecoder/`: config.toml, trusted.toml, AGENTS.md, skills/, agents/."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "codecoder"


def data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "codecoder"


def sessions_db() -> Path:
    return data_dir() / "sessions.sqlite3"


def project_dir(workspace: Path) -> Path:
    """`.codecoder/` of a project: config.toml (shared), config.local.toml (written by us)."""
    return workspace / ".codecoder"


def runtime_dir() -> Path:
    """`$XDG_RUNTIME_DIR/codecoder/`, or `/tmp/codecoder-$UID/` where that variable is
    unset: the daemon's socket and lock (DESIGN.md §7)."""
    value = os.environ.get("XDG_RUNTIME_DIR")
    if value and os.path.isabs(value):
        return Path(value) / "codecoder"
    return Path(f"/tmp/codecoder-{os.getuid()}")


def daemon_socket() -> Path:
    return runtime_dir() / "daemon.sock"
