"""The sandbox of commands: bubblewrap on Linux (docs/sandbox.md, ADR 0002).

The permission check reads a command line; it cannot see what a program does with its
arguments. The sandbox is the boundary that holds whatever the program does: each
command runs under `bwrap` with the whole filesystem read-only, the workspace and a
private `/tmp` writable (`workspace-write`) or only that `/tmp` (`read-only`), the
folders git and CodeCoder take orders from bound read-only again, credential folders
masked, its own pid namespace (nothing outlives it), and no network unless allowed.

    SandboxMode       "off" | "workspace-write" | "read-only"
    wrap_argv()       the argv that runs an argv confined: for whoever spawns commands
                      of their own (plan gates); raises SandboxUnavailable
    SandboxUnavailable  bwrap cannot run here; `str()` says why

The modules: `probe` (does bwrap work here, and why not; cached), `layout` (the
protected folders inside a workspace, the masked credential places), `bwrap` (the
arguments: `Confinement`), `hints` (a failure the sandbox caused, said to the model),
`runtime` (`Sandbox`: one per application, the mode each command runs in).

Importing this package loads nothing but `typing` (not even pathlib): `AgentOptions` and
the command lines of `exec`, `acp` and `daemon` name `SandboxMode` at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

SandboxMode = Literal["off", "workspace-write", "read-only"]
MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)

ESCALATION_ARG = "sandbox"
"""run_command's argument that asks, with `false`, to run outside the sandbox."""


class SandboxUnavailable(Exception):
    """bubblewrap cannot run here (not Linux, not installed, no user namespaces …)."""


def wrap_argv(
    argv: Sequence[str],
    mode: SandboxMode,
    workspace: Path,
    *,
    cwd: Path | None = None,
    network: bool = False,
    extra_roots: Sequence[Path] = (),
) -> list[str]:
    """`argv` as it runs in `mode` for `workspace` (unchanged for "off"): the same
    confinement as `run_command`'s, for code outside a session that spawns commands of
    its own. `cwd` (default: the workspace) is where it starts inside; `extra_roots` are
    more folders it may write in `workspace-write` (and read in `read-only`). Scans the
    workspace for protected folders at each call. Raises SandboxUnavailable when bwrap
    does not work here."""
    if mode == "off":
        return list(argv)
    from pathlib import Path

    from codecoder.sandbox.bwrap import Confinement
    from codecoder.sandbox.probe import require

    roots = (Path(workspace), *extra_roots)
    confinement = Confinement(
        mode, Path(workspace), network=network, extra_roots=tuple(extra_roots), bwrap=require(roots)
    )
    return confinement.wrap(argv, cwd=cwd)
