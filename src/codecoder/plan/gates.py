"""Gates in the sandbox: a plan's gates run in the same sandbox mode as the model's
commands (issue 15, item 5; docs/sandbox.md), decided by the session's Sandbox at the
moment each gate starts, with the same network rules (`[sandbox] network`,
`network_allow`) and the same private /tmp.

A gate is the user's command, so there is no escalation (`sandbox: false` is the model's
to ask for, for its own commands); a sandbox that was asked for and stopped working makes
the gate fail as one that could not start, never run unconfined.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codecoder.kernel.cancel import CancelToken
    from codecoder.plan.runner import CommandRunner
    from codecoder.sandbox.runtime import Sandbox
    from codecoder.tools.process import CommandOutcome, ProcessManager


def gate_runner(manager: ProcessManager, sandbox: Sandbox | None) -> CommandRunner:
    """Where a session's gates run: its process manager, in the sandbox mode its
    commands get (the manager itself when the session has no sandbox)."""
    return manager if sandbox is None else ConfinedGates(manager, sandbox)


class ConfinedGates:
    """A CommandRunner (plan.runner) that runs each gate through `manager`, confined as
    `sandbox` confines a `run_command` at that moment."""

    def __init__(self, manager: ProcessManager, sandbox: Sandbox) -> None:
        self.manager = manager
        self.sandbox = sandbox

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        cancel: CancelToken,
        on_output: Callable[[str], object] | None = None,
        workspace: Path | None = None,
    ) -> CommandOutcome:
        from codecoder.sandbox import SandboxUnavailable

        root = workspace or cwd
        try:
            confinement = self.sandbox.confine(root, command=command, cwd=cwd)
        except SandboxUnavailable as exc:  # asked for and not working: no unconfined run
            raise OSError(f"the sandbox cannot run: {exc}") from exc
        return self.manager.run(
            command,
            cwd=cwd,
            timeout=timeout,
            cancel=cancel,
            on_output=on_output,
            workspace=root,
            wrap=self.sandbox.wrapper(confinement, cwd),
        )
