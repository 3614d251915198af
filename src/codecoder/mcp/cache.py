"""The tools each server offered when it last started, in
`$XDG_DATA_HOME/codecoder/mcp-tools.json`, keyed by the server's definition.

A server takes a while to start (a Python server imports for a second, `npx` may fetch),
and a session's first request must not wait for it. So the tools it offered last time are
offered at once; a call of one waits for the server (up to its `startup_timeout`), and
once the server is up its own list replaces the cached one. A changed definition has
another key, so it never gets a stale list. Losing this file costs nothing but that head
start.

Every start reads this file, so it is bounded: what it keeps is capped as it came in
(entry.py: at most about 2 MiB per server as JSON), the oldest definitions are dropped to
keep it under MAX_FILE_BYTES, and a file over that (written by hand, or by an older
version) is never read: its size is checked first, and it is ignored with a notice.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import msgspec

from codecoder import paths
from codecoder.mcp.entry import MAX_TOOLS, ToolEntry
from codecoder.permissions.tomlfile import atomic_write

__all__ = ["MAX_FILE_BYTES", "MAX_SERVERS", "ToolEntry", "cached", "lookup", "remember"]

MAX_SERVERS = 64
"""Entries kept (the most recently written): old definitions are dropped."""
MAX_FILE_BYTES = 8 * 1024 * 1024
"""The file's size at most; older definitions are dropped to keep under it."""


class _File(msgspec.Struct):
    servers: dict[str, Annotated[list[ToolEntry], msgspec.Meta(max_length=MAX_TOOLS)]] = {}


def _path() -> Path:
    return paths.data_dir() / "mcp-tools.json"


def _load() -> tuple[_File, str | None]:
    """The file, and a notice when it was there but could not be used."""
    path = _path()
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_FILE_BYTES:
                return _File(), (
                    f"MCP tool cache {path} ignored: {size:,} bytes, over the "
                    f"{MAX_FILE_BYTES:,} it may hold (it is rewritten when a server starts)"
                )
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return _File(), None
    if len(data) > MAX_FILE_BYTES:  # it grew as we read
        return _File(), f"MCP tool cache {path} ignored: over {MAX_FILE_BYTES:,} bytes"
    try:
        return msgspec.json.decode(data, type=_File), None
    except msgspec.DecodeError:
        return _File(), None


def lookup(keys: Iterable[str]) -> tuple[dict[str, tuple[ToolEntry, ...]], str | None]:
    """The tools last seen for each definition key that has some (the file read once),
    and a notice when the file was ignored."""
    data, notice = _load()
    found = {key: tuple(data.servers[key]) for key in keys if key in data.servers}
    return found, notice


def cached(key: str) -> tuple[ToolEntry, ...] | None:
    """The tools last seen for the definition `key`, None when there are none."""
    return lookup([key])[0].get(key)


def remember(key: str, tools: tuple[ToolEntry, ...]) -> None:
    """Record `tools` for `key` if they differ from what is recorded (atomic rewrite;
    best effort: a file we cannot write only loses the head start). `tools` came
    through entry.Listing, so they are capped already."""
    data, _ = _load()
    if tuple(data.servers.get(key, ())) == tools and key in data.servers:
        return
    data.servers.pop(key, None)
    data.servers[key] = list(tools[:MAX_TOOLS])
    while len(data.servers) > MAX_SERVERS:
        data.servers.pop(next(iter(data.servers)))
    encoded = msgspec.json.encode(data)
    while len(encoded) > MAX_FILE_BYTES and len(data.servers) > 1:
        data.servers.pop(next(iter(data.servers)))
        encoded = msgspec.json.encode(data)
    if len(encoded) > MAX_FILE_BYTES:
        return  # not even this one listing fits (it cannot, once capped)
    with contextlib.suppress(OSError):
        atomic_write(_path(), encoded.decode())
