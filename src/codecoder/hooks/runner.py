"""Running the hooks of an event (docs/hooks.md, "How a hook runs").

Each hook is `bash -c COMMAND` in the workspace, run by the session's ProcessManager: in
a process group of its own, its whole tree killed when the turn is cancelled, at its
`timeout`, or if CodeCoder dies (the watchdog). It is not confined by the sandbox: a hook
is the user's own command, as a plan gate is. It sees the environment commands see
(secrets scrubbed, git kept in the repository: tools/environment.py) plus
CODECODER_HOOK_EVENT, CODECODER_SESSION_ID and CODECODER_PROJECT_DIR, and reads one JSON
object on stdin.

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
from typing import Any

import msgspec

from codecoder.hooks.config import HookEvent, HookSet, HookSpec
from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.tools.process import ProcessManager

MAX_CONTEXT = 10_000
"""Characters of a hook's stdout given to the model (the rest is cut, and it says so)."""
MAX_REASON = 4_000
"""Characters of a blocking hook's stderr given as the reason."""


class HookResult(msgspec.Struct):
    """What the hooks of one event said: `context` (the stdout of those that exited 0,
    joined), `blocked` (the stderr of the one that exited 2), `warnings` (one line for
    each that ended otherwise)."""

    context: str = ""
    blocked: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    ran: int = 0


class HookRunner:
    """Runs a session's hooks. `turn` says the running turn (for the JSON); warnings of
    hooks that have no tool call to report them on wait in `take_notices`."""

    def __init__(
        self,
        hooks: HookSet,
        manager: ProcessManager,
        workspace: Path,
        session_id: str,
        *,
        turn: Callable[[], int] = lambda: 0,
    ) -> None:
        self.hooks = hooks
        self.manager = manager
        self.workspace = workspace
        self.session_id = session_id
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
            outcome = self._run_one(spec, body, cancel)
            if isinstance(outcome, str):  # could not start
                result.warnings.append(f"{_who(spec)} could not run: {outcome}")
                continue
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
                result.warnings.append(_failed(spec, outcome.returncode, outcome.errors))
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

    def _run_one(self, spec: HookSpec, body: bytes, cancel: CancelToken) -> Any:
        env = {
            "CODECODER_HOOK_EVENT": spec.event,
            "CODECODER_SESSION_ID": self.session_id,
            "CODECODER_PROJECT_DIR": str(self.workspace),
        }
        try:
            return self.manager.run(
                spec.command,
                cwd=self.workspace,
                timeout=spec.timeout,
                cancel=cancel,
                stdin=body,
                stderr=True,
                env=env,
            )
        except OSError as exc:
            return exc.strerror or str(exc)


def _who(spec: HookSpec) -> str:
    command = spec.command if len(spec.command) <= 60 else spec.command[:57] + "…"
    return f"{spec.event} hook `{command}`"


def _failed(spec: HookSpec, code: int | None, errors: str) -> str:
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited {code}"
    tail = errors.strip().splitlines()[-1:] if errors.strip() else []
    return f"{_who(spec)} {how}" + (f": {tail[0][:200]}" if tail else "")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} characters cut]"
