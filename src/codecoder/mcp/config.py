"""Which MCP servers a session starts (docs/mcp.md).

`[mcp.servers.NAME]` of the user's config always. A project's (`.codecoder/config.toml`
and `config.local.toml`) only in a folder the user trusted, and only once the user has
approved that exact definition for that folder (`codecoder mcp approve NAME`): the
approval is a digest of the folder, the name and what is run or contacted (command,
args, env, cwd; url, headers), kept in `$XDG_DATA_HOME/codecoder/mcp-approvals.json`.
A repository that changes a definition after it was approved (the lesson of
CVE-2025-61260 and Cursor's "MCPoison") gets it run only after the user approves it
again. What the approved command then reads (a script in the repository) a confined
command may have rewritten: so a project's stdio server runs in the session's sandbox
(manager.py, `Sandbox.confine_started`), and one that says `sandbox = false`
does not run at all, approved or not, as a project's hook that says so (hooks/config.py).
Only the user's own config may run a server on the host, and does by default. Where
bwrap does not work, or with `--sandbox off`, a project's server runs on the host.

A project server that has the name of one of the user's is ignored: the user's rules
for `mcp__NAME__*` were written for the user's server.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from codecoder import approval_store, paths
from codecoder.config import ConfigError

Origin = Literal["user", "project"]
Transport = Literal["stdio", "http"]

SERVER_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
"""Letters, digits, `-` and single `_`: a `__` would blur where the server's name ends in
`mcp__SERVER__TOOL` (and in rules like `mcp__git__*`)."""
MAX_NAME = 32


class ServerSpec(msgspec.Struct, frozen=True):
    """One server as configured (`[mcp.servers.NAME]`, checked by config_schema)."""

    name: str
    origin: Origin
    source: str
    """The file that defines it (for messages)."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    enabled: bool = True
    startup_timeout: float = 10.0
    tool_timeout: float = 120.0
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    workspace: str = ""
    """The folder a project server belongs to (its `cwd` is relative to it)."""
    sandbox: bool | None = None
    """As configured; `confined` says what absent means."""

    @property
    def confined(self) -> bool:
        """Whether a run of it goes through the session's sandbox: a project's server
        unless it says `sandbox = false` (then it is not selected), the user's only when
        it says `sandbox = true`."""
        return self.origin == "project" if self.sandbox is None else self.sandbox

    @property
    def transport(self) -> Transport:
        return "http" if self.url is not None else "stdio"

    def describe(self) -> str:
        """What runs (`mcp-server-git --repository .`) or where it is (the URL)."""
        if self.url is not None:
            return self.url
        import shlex

        return shlex.join([self.command or "", *self.args])

    def wants(self, tool: str) -> bool:
        """Whether the server's tool `tool` is offered (`include` / `exclude`)."""
        if self.include and tool not in self.include:
            return False
        return tool not in self.exclude

    def working_dir(self) -> str | None:
        """The child's cwd: `cwd` (relative to the project's folder for a project server,
        `~` expanded), else the project's folder, else ours."""
        if self.cwd is None:
            return self.workspace or None
        folder = os.path.expanduser(self.cwd)
        return os.path.join(self.workspace, folder) if self.workspace else folder

    def digest(self) -> str:
        """What an approval is given to: the folder, the name and what runs or is
        contacted (not timeouts or tool filters, which change nothing that runs). Of
        msgspec's key-sorted JSON, not `approval_store.digest`'s: the approvals and cached
        tool lists (`cache_key`) already written hold digests of these bytes."""
        what = {
            "workspace": self.workspace,
            "name": self.name,
            "command": self.command,
            "args": list(self.args),
            "env": self.env,
            "cwd": self.cwd,
            "url": self.url,
            "headers": self.headers,
        }
        return hashlib.sha256(msgspec.json.encode(what, order="sorted")).hexdigest()

    def cache_key(self) -> str:
        """The key of this definition's tool list in the cache (cache.py)."""
        return f"{self.origin}:{self.name}:{self.digest()[:16]}"


class Selection(msgspec.Struct, frozen=True):
    """The servers to start, and those left out, each with the line that says why."""

    servers: tuple[ServerSpec, ...] = ()
    left_out: tuple[tuple[ServerSpec, str], ...] = ()
    workspace: str = ""
    """The session's folder: what a confined server of the user's may write."""


def select(workspace: Path, user: Mapping[str, Any], project: Mapping[str, Any]) -> Selection:
    """The servers of a session in `workspace`: `user` is the user's config, `project` the
    merged project config (empty unless the folder is trusted). Raises ConfigError for a
    server that names no command and no URL, or both, or has a name we cannot use."""
    mine = servers_of(user, "user", str(paths.config_dir() / "config.toml"))
    theirs = servers_of(
        project,
        "project",
        str(paths.project_dir(workspace) / "config.toml"),
        workspace=str(workspace),
    )
    approved = Approvals.load()
    chosen: list[ServerSpec] = []
    left_out: list[tuple[ServerSpec, str]] = []
    for spec in mine:
        if spec.enabled:
            chosen.append(spec)
        else:
            left_out.append((spec, "disabled (enabled = false)"))
    names = {spec.name for spec in mine}
    for spec in theirs:
        if spec.name in names:
            left_out.append((spec, f"ignored: your own config defines a server {spec.name!r}"))
        elif not spec.enabled:
            left_out.append((spec, "disabled (enabled = false)"))
        elif spec.sandbox is False:
            left_out.append((spec, _unconfined(spec)))
        elif not approved.has(spec):
            left_out.append((spec, _unapproved(spec, approved)))
        else:
            chosen.append(spec)
    return Selection(servers=tuple(chosen), left_out=tuple(left_out), workspace=str(workspace))


def _unconfined(spec: ServerSpec) -> str:
    """Why a project server with `sandbox = false` does not run: a repository must not
    take the sandbox away from what runs its files."""
    return (
        f"project server not run (sandbox = false in {spec.source}): only your own config "
        "may run a server outside the sandbox; move its definition there to run it on the host"
    )


def _unapproved(spec: ServerSpec, approved: Approvals) -> str:
    changed = approved.known(spec)
    what = "its definition changed since you approved it" if changed else "not approved yet"
    return (
        f"project server, {what}: check `{spec.describe()}` and run "
        f"`codecoder mcp approve {spec.name}` to start it"
    )


def servers_of(
    config: Mapping[str, Any], origin: Origin, source: str, *, workspace: str = ""
) -> list[ServerSpec]:
    """The `[mcp.servers.*]` of one config (already checked against the schema)."""
    table = config.get("mcp", {})
    servers = table.get("servers", {}) if isinstance(table, dict) else {}
    out: list[ServerSpec] = []
    for name, raw in servers.items():
        if len(name) > MAX_NAME or not SERVER_NAME.fullmatch(name):
            raise ConfigError(
                f"{source}: [mcp.servers.{name}]: a server name is 1 to {MAX_NAME} letters, "
                "digits, `-` and single `_` (a `__` would blur mcp__SERVER__TOOL)"
            )
        if (raw.get("command") is None) == (raw.get("url") is None):
            raise ConfigError(
                f"{source}: [mcp.servers.{name}] needs either `command` (a server run as a "
                "child process) or `url` (streamable HTTP), not both"
            )
        url = raw.get("url")
        if url is not None and not url.startswith(("http://", "https://")):
            raise ConfigError(f"{source}: [mcp.servers.{name}] url must be http:// or https://")
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
        out.append(
            msgspec.convert(
                {
                    **fields,
                    "name": name,
                    "origin": origin,
                    "source": source,
                    "workspace": workspace,
                },
                type=ServerSpec,
            )
        )
    return out


def approvals_file() -> Path:
    return paths.data_dir() / "mcp-approvals.json"


class Approval(msgspec.Struct, frozen=True):
    workspace: str
    name: str
    digest: str
    definition: str


class Approvals(approval_store.Store[Approval]):
    """The project servers the user approved: one entry per (folder, name), holding the
    digest of the definition approved."""

    file = staticmethod(approvals_file)

    def has(self, spec: ServerSpec) -> bool:
        return any(e.digest == spec.digest() for e in self.entries)

    def known(self, spec: ServerSpec) -> bool:
        """Whether some definition of this folder's server was approved before."""
        return any(e.workspace == spec.workspace and e.name == spec.name for e in self.entries)

    def approve(self, spec: ServerSpec) -> None:
        """Record `spec` as approved (replacing an earlier approval of its name here) and
        write the file atomically."""
        kept = [
            e for e in self.entries if not (e.workspace == spec.workspace and e.name == spec.name)
        ]
        kept.append(Approval(spec.workspace, spec.name, spec.digest(), spec.describe()))
        self.entries = kept
        self.save()
