"""Which hooks a session runs (docs/hooks.md, "Project hooks").

`[[hooks.EVENT]]` of the user's config always. A project's (`.codecoder/config.toml` and
`config.local.toml`) only in a folder the user trusted (permissions/trust.py), and only
once the user has approved that exact hook there (`codecoder hooks approve`): the
approval is a digest of the folder, the event, the command and the matcher, kept in
`$XDG_DATA_HOME/codecoder/hook-approvals.json`. A hook a repository adds or changes after
the approval does not run until the user approves again; the session says so. An
untrusted folder's files are not even read. What an approved command reads (a script in
the repository) is not covered: approve a command you would run yourself.

Where the session's commands are confined, hooks are too (runner.py). `sandbox = false`
takes a hook out of the sandbox only in the user's config: a project's hook that says so
does not run, approved or not, since a repository must not be able to take the sandbox
away from what runs its files (issue 25, item 3).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from codecoder import approval_store, paths
from codecoder.config import ConfigError

HookEvent = Literal["session_start", "user_prompt", "pre_tool", "post_tool", "pre_compact", "stop"]
EVENTS: tuple[HookEvent, ...] = (
    "session_start",
    "user_prompt",
    "pre_tool",
    "post_tool",
    "pre_compact",
    "stop",
)
TOOL_EVENTS = ("pre_tool", "post_tool")
"""The events a `matcher` applies to."""
Origin = Literal["user", "project"]


class HookSpec(msgspec.Struct, frozen=True):
    """One hook as configured."""

    event: HookEvent
    command: str
    origin: Origin
    source: str
    """The file that defines it (for messages)."""
    matcher: str | None = None
    timeout: float = 60.0
    workspace: str = ""
    """The folder a project hook belongs to."""
    sandbox: bool = True
    """False: runs on the host even where the session's commands are confined (the
    user's hooks only: `select`)."""

    def matches(self, tool: str | None) -> bool:
        """Whether the hook runs for this tool (`matcher`: `*` globs, `|` between
        alternatives, case-sensitive); a hook without one runs for every tool."""
        if self.matcher is None or tool is None:
            return True
        return any(fnmatch.fnmatchcase(tool, part.strip()) for part in self.matcher.split("|"))

    def digest(self) -> str:
        """What an approval is given to: the folder, the event and what runs for which
        tools (not the timeout, which changes nothing that runs)."""
        return approval_store.digest([self.workspace, self.event, self.command, self.matcher])

    def describe(self) -> str:
        matcher = f" [{self.matcher}]" if self.matcher else ""
        return f"{self.event}{matcher}: {self.command}"


class HookSet(msgspec.Struct, frozen=True):
    """The hooks to run, and those left out, each with the line that says why."""

    hooks: tuple[HookSpec, ...] = ()
    left_out: tuple[tuple[HookSpec, str], ...] = ()

    def of(self, event: HookEvent, tool: str | None = None) -> list[HookSpec]:
        return [h for h in self.hooks if h.event == event and h.matches(tool)]

    def has(self, event: HookEvent) -> bool:
        return any(h.event == event for h in self.hooks)


def hooks_of(
    config: Mapping[str, Any], origin: Origin, source: str, *, workspace: str = ""
) -> list[HookSpec]:
    """The `[[hooks.*]]` of one config (already checked against the schema); a matcher
    on an event that has no tool is a ConfigError."""
    table = config.get("hooks")
    if not isinstance(table, dict):
        return []
    found: list[HookSpec] = []
    for event in EVENTS:
        for raw in table.get(event) or []:
            if raw.get("matcher") is not None and event not in TOOL_EVENTS:
                raise ConfigError(
                    f"{source}: [[hooks.{event}]] has a matcher, but only pre_tool and "
                    "post_tool hooks are about a tool"
                )
            fields = {**raw, "event": event, "origin": origin, "source": source}
            found.append(msgspec.convert({**fields, "workspace": workspace}, type=HookSpec))
    return found


def project_hooks(workspace: Path) -> list[HookSpec]:
    """The hooks a project's files define (read whether or not it is trusted: for
    `codecoder hooks`, never to run them)."""
    folder = paths.project_dir(workspace)
    where = os.path.realpath(workspace)  # approvals name the folder as trust does
    found: list[HookSpec] = []
    for name in ("config.toml", "config.local.toml"):
        path = folder / name
        found += hooks_of(read(path), "project", str(path), workspace=where)
    return found


def read(path: Path) -> dict[str, Any]:
    from codecoder.config import read_toml

    return read_toml(path)


def select(workspace: Path, user: Mapping[str, Any], *, trusted: bool) -> HookSet:
    """The hooks of a session in `workspace`: the user's, then a trusted project's that
    were approved. Raises ConfigError for a file that cannot be read."""
    mine = hooks_of(user, "user", str(paths.config_dir() / "config.toml"))
    if not trusted:
        return HookSet(hooks=tuple(mine))
    approved = Approvals.load()
    chosen = list(mine)
    left_out: list[tuple[HookSpec, str]] = []
    for spec in project_hooks(workspace):
        if not spec.sandbox:
            left_out.append((spec, unconfined(spec)))
        elif approved.has(spec):
            chosen.append(spec)
        else:
            left_out.append((spec, unapproved(spec, approved)))
    return HookSet(hooks=tuple(chosen), left_out=tuple(left_out))


def unconfined(spec: HookSpec) -> str:
    """Why a project hook with `sandbox = false` does not run (only the user's config may
    take a hook out of the sandbox)."""
    return (
        f"project hook not run (sandbox = false): {spec.describe()} in {spec.source}; only "
        "your own config may run a hook outside the sandbox"
    )


def unapproved(spec: HookSpec, approved: Approvals) -> str:
    what = "changed or added since you approved its hooks" if approved.known(spec) else "new"
    return (
        f"project hook not run ({what}): {spec.describe()} in {spec.source}; check it and "
        "run `codecoder hooks approve` to let it run"
    )


def approvals_file() -> Path:
    return paths.data_dir() / "hook-approvals.json"


class Approval(msgspec.Struct, frozen=True):
    workspace: str
    event: str
    command: str
    matcher: str | None
    digest: str


class Approvals(approval_store.Store[Approval]):
    """The project hooks the user approved, by digest."""

    file = staticmethod(approvals_file)

    def has(self, spec: HookSpec) -> bool:
        return any(e.digest == spec.digest() for e in self.entries)

    def known(self, spec: HookSpec) -> bool:
        """Whether some hooks of this folder were approved before (so this one changed
        or was added since)."""
        return any(e.workspace == spec.workspace for e in self.entries)

    def approve(self, workspace: str, specs: list[HookSpec]) -> None:
        """Approve exactly `specs` for `workspace` (earlier approvals there are replaced:
        a hook removed from the project is no longer approved) and write the file
        atomically."""
        kept = [e for e in self.entries if e.workspace != workspace]
        kept += [Approval(workspace, s.event, s.command, s.matcher, s.digest()) for s in specs]
        self.entries = kept
        self.save()
