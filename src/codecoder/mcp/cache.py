"""The tools each server offered when it last started, in
`$XDG_DATA_HOME/codecoder/mcp-tools.json`, keyed by the server's definition.

A server takes a while to start (a Python server imports for a second, `npx` may fetch),
and a session's first request must not wait for it. So the tools it offered last time are
offered at once; a call of one waits for the server (up to its `startup_timeout`), and
once the server is up its own list replaces the cached one. A changed definition has
another key, so it never gets a stale list. Losing this file costs nothing but that head
start.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import msgspec

from codecoder import paths

MAX_SERVERS = 64
"""Entries kept (the most recently written): old definitions are dropped."""


class ToolEntry(msgspec.Struct, frozen=True):
    """One tool as the server described it (raw: still untrusted, not yet capped)."""

    name: str
    description: str = ""
    schema: dict[str, Any] = {}


class _File(msgspec.Struct):
    servers: dict[str, list[ToolEntry]] = {}


def _path() -> Path:
    return paths.data_dir() / "mcp-tools.json"


def _load() -> _File:
    try:
        return msgspec.json.decode(_path().read_bytes(), type=_File)
    except (OSError, msgspec.DecodeError):
        return _File()


def cached(key: str) -> tuple[ToolEntry, ...] | None:
    """The tools last seen for the definition `key`, None when there are none."""
    found = _load().servers.get(key)
    return tuple(found) if found is not None else None


def remember(key: str, tools: tuple[ToolEntry, ...]) -> None:
    """Record `tools` for `key` if they differ from what is recorded (atomic rewrite;
    best effort: a file we cannot write only loses the head start)."""
    data = _load()
    if tuple(data.servers.get(key, ())) == tools and key in data.servers:
        return
    data.servers.pop(key, None)
    data.servers[key] = list(tools)
    while len(data.servers) > MAX_SERVERS:
        data.servers.pop(next(iter(data.servers)))
    from codecoder.permissions.tomlfile import atomic_write

    with contextlib.suppress(OSError):
        atomic_write(_path(), msgspec.json.encode(data).decode())
