"""Running the hooks of an event (docs/hooks.md, "How a hook runs").

Each hook is `bash -c COMMAND` in the workspace, run by the session's ProcessManager: in
a process group of its own, its whole tree killed when the turn is cancelled, at its
`timeout`, or if CodeCoder dies (the watchdog). It sees the environment commands see
(secrets scrubbed, git kept in the repository: tools/environment.py) plus
CODECODER_HOOK_EVENT, CODECODER_SESSION_ID and CODECODER_PROJECT_DIR, and reads one JSON
object on stdin.

It runs in the sandbox mode the model's commands get at that moment, and where they run
unconfined by default (no `--sandbox`, an approval mode but `full-auto`) in
`workspace-write` whenever bwrap works (Sandbox.confine_started): a hook runs workspace
content (`make -s test` runs the Makefile the model wrote, or one a confined command of
an earlier session wrote, or one `write_file` wrote unasked in `auto-edit`), and nobody is
asked before it runs. Same network rules, same private /tmp; no escalation, since a hook is
the user's command: `sandbox = false` in the user's own config runs it on the host
(config.py refuses it from a project). A sandbox that was asked for and stopped working
makes the hook one that could not start, never an unconfined run. A confined hook that
fails says what the sandbox may have blocked (sandbox/hints.py).

The hooks of an event run one after another, in the order configured (the user's before
a project's); the first that exits 2 blocks, and the rest do not run. Exit 0 goes on
(its stdout is context where the event takes it); any other end (another exit code, a
signal, the timeout, a command that could not start) is a warning, and the session goes
on as if the hook had not been there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.hooks.config import HookEvent, HookSet, HookSpec
from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.tools.process import CommandOutcome, ProcessManager

if TYPE_CHECKING:
    from codecoder.sandbox.bwrap import Confinement
    from codecoder.sandbox.runtime import Sandbox

MAX_CONTEXT = 10_000
"""Characters of a hook's stdout given to the model (the rest is cut, and it says so)."""
MAX_REASON = 4_000
"""Characters of a blocking hook's stderr given as the reason."""
REMEDY = "A hook of your own config that needs it can say `sandbox = false` (docs/hooks.md)."
"""How a hook the sandbox blocked gets more: the user's to decide, not the model's."""


class HookResult(msgspec.Struct):
    """What the hooks of one event said: `context` (the stdout of those that exited 0,
    joined), `blocked` (the stderr of the one that exited 2), `warnings` (one line for
    each that ended otherwise)."""

    context: str = ""
    blocked: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    ran: int = 0


class HookRunner:
    """Runs a session's hooks, confined as `sandbox` confines a command (None: none is).
    `turn` says the running turn (for the JSON); warnings of hooks that have no tool
    call to report them on wait in `take_notices`."""

    def __init__(
        self,
        hooks: HookSet,
        manager: ProcessManager,
        workspace: Path,
        session_id: str,
        *,
        sandbox: Sandbox | None = None,
        turn: Callable[[], int] = lambda: 0,
    ) -> None:
        self.hooks = hooks
        self.manager = manager
        self.workspace = workspace
        self.session_id = session_id
        self.sandbox = sandbox
        self.turn = turn
        self._lock = threading.Lock()
        self._notices: list[str] = [reason for _, reason in hooks.left_out]

    def has(self, event: HookEvent) -> bool:
        return self.hooks.has(event)

    def run(
        self,
        event: HookEvent,
        payload: dict[str, Any],
        cancel: CancelToken,
        *,
        tool: str | None = None,
    ) -> HookResult:
        """Run the hooks of `event` (those whose matcher takes `tool`). Raises Cancelled
        when `cancel` flips: the running hook's tree is killed first."""
        result = HookResult()
        specs = self.hooks.of(event, tool)
        if not specs:
            return result
        body = msgspec.json.encode(self._payload(event, payload))
        contexts: list[str] = []
        for spec in specs:
            result.ran += 1
            ran = self._run_one(spec, body, cancel)
            if isinstance(ran, str):  # could not start
                result.warnings.append(f"{_who(spec)} could not run: {ran}")
                continue
            outcome, confinement = ran
            if outcome.ended == "cancelled" or cancel.is_cancelled():
                raise Cancelled(cancel.reason)
            if outcome.ended == "timeout":
                result.warnings.append(
                    f"{_who(spec)} timed out after {spec.timeout:g} s and was killed"
                )
            elif outcome.returncode == 0:
                if outcome.output.strip():
                    contexts.append(outcome.output.strip())
            elif outcome.returncode == 2:
                reason = _cut(outcome.errors.strip(), MAX_REASON)
                result.blocked = reason or f"{_who(spec)} exited 2 (no reason on stderr)"
                break
            else:
                result.warnings.append(_failed(spec, outcome, confinement))
        result.context = _cut("\n\n".join(contexts), MAX_CONTEXT)
        return result

    def warn(self, lines: list[str]) -> None:
        """Keep warnings for the next time the loop takes notices."""
        if lines:
            with self._lock:
                self._notices.extend(lines)

    def take_notices(self) -> list[str]:
        with self._lock:
            taken, self._notices = self._notices, []
        return taken

    def _payload(self, event: HookEvent, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "event": event,
            "session_id": self.session_id,
            "cwd": str(self.workspace),
            "turn": self.turn(),
            **extra,
        }

    def _run_one(
        self, spec: HookSpec, body: bytes, cancel: CancelToken
    ) -> tuple[CommandOutcome, Confinement | None] | str:
        """The hook's outcome and how it was confined, or why it could not start."""
        from codecoder.sandbox import SandboxUnavailable

        env = {
            "CODECODER_HOOK_EVENT": spec.event,
            "CODECODER_SESSION_ID": self.session_id,
            "CODECODER_PROJECT_DIR": str(self.workspace),
        }
        confinement = wrap = None
        if self.sandbox is not None and spec.sandbox:
            try:
                confinement = self.sandbox.confine_started(
                    self.workspace, command=spec.command, cwd=self.workspace
                )
            except SandboxUnavailable as exc:  # asked for and not working: no unconfined run
                return f"the sandbox cannot run: {exc}"
            wrap = self.sandbox.wrapper(confinement, self.workspace)
        try:
            outcome = self.manager.run(
                spec.command,
                cwd=self.workspace,
                timeout=spec.timeout,
                cancel=cancel,
                stdin=body,
                stderr=True,
                env=env,
                wrap=wrap,
            )
        except OSError as exc:
            return exc.strerror or str(exc)
        return outcome, confinement


def _who(spec: HookSpec) -> str:
    command = spec.command if len(spec.command) <= 60 else spec.command[:57] + "…"
    return f"{spec.event} hook `{command}`"


def _failed(spec: HookSpec, outcome: CommandOutcome, confinement: Confinement | None) -> str:
    """The warning of a hook that ended with another exit code or a signal, with what
    the sandbox may have blocked when it ran confined."""
    code, errors = outcome.returncode, outcome.errors
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited {code}"
    tail = errors.strip().splitlines()[-1:] if errors.strip() else []
    line = f"{_who(spec)} {how}" + (f": {tail[0][:200]}" if tail else "")
    hint = _hint(outcome, confinement)
    return line if hint is None else f"{line} {hint}"


def _hint(outcome: CommandOutcome, confinement: Confinement | None) -> str | None:
    """run_command's hint, read from both streams (a hook's are kept apart)."""
    if confinement is None:
        return None
    from codecoder.sandbox.hints import failure_hint
    from codecoder.sandbox.layout import hidden_places

    masked = tuple(mask.path for mask in hidden_places())
    return failure_hint(f"{outcome.errors}\n{outcome.output}", confinement, masked, remedy=REMEDY)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} characters cut]"
