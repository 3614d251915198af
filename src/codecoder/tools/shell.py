"""`run_command`: a shell command in the workspace, its output streamed live.

The process work (groups, the tree kill, the subreaper, reaping) is ProcessManager's;
this module turns the model's arguments into a run and the outcome into a ToolResult.
A command that ran and failed (non-zero exit, killed, timed out) is a result with status
"error" the model can read; only a command that could not start is a ToolFailure.

With a sandbox (sandbox/runtime.py), each command runs in the mode it decides at that
moment; a failure the sandbox may have caused gets a hint line for the model, and
`sandbox: false` runs the command unconfined, which the permission policy always puts
to the user (permissions/chain.py, "escalation").
"""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import msgspec

from codecoder.boundary import is_inside, resolve
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext, ToolFailure
from codecoder.tools.base import TypedTool
from codecoder.tools.process import HEAD_BYTES, TAIL_BYTES, CommandOutcome, ProcessManager

if TYPE_CHECKING:
    from codecoder.sandbox.bwrap import Confinement
    from codecoder.sandbox.runtime import Sandbox

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0

Around = Callable[[Callable[[], ToolResult], ToolContext], ToolResult]
"""Something taken around a run that may change the workspace: (the run, its context)."""


class RunCommandArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Arguments of run_command."""

    command: Annotated[str, msgspec.Meta(description="The command line, run by bash -c.")]
    cwd: Annotated[
        str | None,
        msgspec.Meta(description="Directory to run in, relative to the workspace root."),
    ] = None
    timeout: Annotated[
        float,
        msgspec.Meta(gt=0, le=MAX_TIMEOUT, description="Seconds before the command is killed."),
    ] = DEFAULT_TIMEOUT
    sandbox: Annotated[
        bool,
        msgspec.Meta(
            description="false: run outside the sandbox. The user is always asked first; "
            "use it only when the result said the sandbox blocked what the command needs."
        ),
    ] = True


class RunCommand(TypedTool[RunCommandArgs]):
    name = "run_command"
    description = (
        "Run a shell command (bash -c) in the workspace and return its output and exit code. "
        "stdin is closed; stdout and stderr are merged. Output over "
        f"{(HEAD_BYTES + TAIL_BYTES) // 1024} KiB keeps its first {HEAD_BYTES // 1024} and "
        f"last {TAIL_BYTES // 1024} KiB. Killed after `timeout` seconds ({DEFAULT_TIMEOUT:g} "
        f"by default, at most {MAX_TIMEOUT:g}). Processes it leaves in the background are "
        "killed when it exits, so no servers or watchers. Prefer read_file, grep and glob "
        "to cat, grep and find."
    )
    risk: Risk = "execute"
    args_type: ClassVar[type[msgspec.Struct]] = RunCommandArgs
    aliases = {"cmd": "command", "workdir": "cwd", "directory": "cwd", "dir_path": "cwd"}

    def __init__(self, manager: ProcessManager, sandbox: Sandbox | None = None) -> None:
        self.manager = manager
        self.sandbox = sandbox

    @property
    def parameters(self) -> dict[str, Any]:
        """Without a sandbox there is nothing to escalate from: no `sandbox` argument."""
        schema = super().parameters
        if self._escapable():
            return schema
        properties = {k: v for k, v in schema["properties"].items() if k != "sandbox"}
        return {**schema, "properties": properties}

    def _escapable(self) -> bool:
        """Whether there is a sandbox a command could be let out of (`--sandbox off`
        and no sandbox at all: there is not)."""
        return self.sandbox is not None and self.sandbox.explicit != "off"

    def adapt(self, args: dict[str, Any]) -> dict[str, Any]:
        """A command as a list (Codex's argv, `["bash", "-lc", "make"]`) becomes the line
        that runs it, quoted by shlex.join, so the policy parses what bash will run; a
        one-item list is taken as the line itself. `timeout_ms` becomes `timeout`;
        Claude Code's `description` of the command is dropped, and so is `sandbox` where
        there is no sandbox to leave (it is not offered then): the command runs as every
        command does there, and the policy must not take it for an escalation that only
        the user can allow (a model that knows the field from another session sends it)."""
        dropped = {"description"} if self._escapable() else {"description", "sandbox"}
        out = {key: value for key, value in args.items() if key not in dropped}
        command = out.get("command")
        if isinstance(command, list):
            words: list[Any] = command  # type: ignore[assignment]
            if not words or not all(isinstance(word, str) for word in words):
                raise ValueError("`command` is a list that is empty or holds more than text")
            out["command"] = words[0] if len(words) == 1 else shlex.join(words)
        millis = out.pop("timeout_ms", None)
        if millis is not None:
            if "timeout" in out:
                raise ValueError("`timeout` and `timeout_ms` name the same field")
            try:
                out["timeout"] = float(millis) / 1000
            except (TypeError, ValueError):
                raise ValueError(f"`timeout_ms` is not a number: {millis!r}") from None
        return out

    def run(
        self, args: dict[str, Any], ctx: ToolContext, *, around: Around | None = None
    ) -> ToolResult:
        """`around` is taken around a command that may change the workspace (the
        session's checkpoints), decided with its confinement: a command confined so
        that it cannot write the workspace (`Confinement.keeps_roots`) runs without."""
        return self._run(self.parse(args), ctx, around)

    def call(self, args: RunCommandArgs, ctx: ToolContext) -> ToolResult:
        return self._run(args, ctx, None)

    def _run(self, args: RunCommandArgs, ctx: ToolContext, around: Around | None) -> ToolResult:
        _check_command(args.command)
        cwd = _resolve_cwd(args.cwd, ctx)
        confinement = self._confinement(args, cwd, ctx)

        def spawn() -> ToolResult:
            wrap = self.sandbox.wrapper(confinement, cwd) if self.sandbox else None
            limited = False
            try:
                outcome = self.manager.run(
                    args.command,
                    cwd=cwd,
                    timeout=args.timeout,
                    cancel=ctx.cancel,
                    on_output=ctx.output,
                    workspace=ctx.workspace,
                    wrap=wrap,
                )
            except OSError as exc:
                raise ToolFailure("crashed", f"could not start the command: {exc}") from exc
            finally:
                if self.sandbox is not None:
                    limited = self.sandbox.finished(wrap)
            hint = _hint(outcome, confinement, limited=limited)
            return _to_result(ctx.call_id, outcome, args.timeout, hint)

        if around is None or (confinement is not None and confinement.keeps_roots()):
            return spawn()
        return around(spawn, ctx)

    def _confinement(self, args: RunCommandArgs, cwd: Path, ctx: ToolContext) -> Confinement | None:
        """How this command runs (None: unconfined); says once when full-auto runs
        without the sandbox it expected."""
        if self.sandbox is None or not args.sandbox:
            return None
        from codecoder.sandbox import SandboxUnavailable

        try:
            confinement = self.sandbox.confine(
                ctx.workspace, command=args.command, cwd=cwd, extra_roots=ctx.extra_roots
            )
        except SandboxUnavailable as exc:  # asked for, and bwrap stopped working: no run
            raise ToolFailure("crashed", f"the sandbox cannot run: {exc}") from exc
        notice = self.sandbox.take_notice()
        if notice is not None:
            ctx.emit(StatusUpdate("running_tool", notice, notice="sandbox"))
        return confinement


def _check_command(command: str) -> None:
    """Reject what no command line can carry (the OS would refuse it at exec)."""
    if "\0" in command:
        raise ToolFailure("invalid_args", "the command contains a NUL character")
    try:
        os.fsencode(command)
    except UnicodeEncodeError as exc:
        raise ToolFailure("invalid_args", f"the command is not valid text: {exc.reason}") from exc


def _resolve_cwd(cwd: str | None, ctx: ToolContext) -> Path:
    """The run directory: an existing directory inside the workspace (or an extra root)."""
    try:
        target = resolve(ctx.workspace, cwd or ".")
    except ValueError as exc:
        raise ToolFailure("invalid_args", f"invalid cwd {cwd!r}: {exc}") from exc
    if not is_inside(target, (ctx.workspace, *ctx.extra_roots)):
        raise ToolFailure("invalid_args", f"cwd {cwd!r} is outside the workspace")
    if not target.is_dir():
        raise ToolFailure("invalid_args", f"cwd {cwd!r} is not a directory")
    return target


def _hint(
    outcome: CommandOutcome, confinement: Confinement | None, *, limited: bool = False
) -> str | None:
    """What the sandbox may have blocked, for a confined command that failed; that it
    reached the process limit (`limited`: known for sure) whether it failed or not: a
    fork bomb's shell exits 0, its children are what hit the limit."""
    if confinement is None or outcome.ended == "cancelled":
        return None
    from codecoder.sandbox.hints import failure_hint, limit_hint
    from codecoder.sandbox.layout import hidden_places

    if (found := limit_hint(outcome.output, confinement, reached=limited)) is not None:
        return found
    if outcome.ended == "exited" and outcome.returncode == 0:
        return None

    masked = tuple(mask.path for mask in hidden_places())
    return failure_hint(outcome.output, confinement, masked)


def _to_result(
    call_id: str, outcome: CommandOutcome, timeout: float, hint: str | None = None
) -> ToolResult:
    status_line = _status_line(outcome, timeout)
    body = outcome.output or "(no output)\n"
    sep = "" if body.endswith("\n") else "\n"
    text = f"{body}{sep}[{status_line}]"
    if hint is not None:
        text += "\n" + hint
    if outcome.ended == "cancelled":
        return tool_result(call_id, text, "cancelled")
    ok = outcome.ended == "exited" and outcome.returncode == 0
    return tool_result(call_id, text, "success" if ok else "error")


def _status_line(outcome: CommandOutcome, timeout: float) -> str:
    if outcome.ended == "timeout":
        if timeout < MAX_TIMEOUT:
            raise_it = f"give `timeout` up to {MAX_TIMEOUT:g} (seconds) if it needs longer"
        else:
            raise_it = "that is the most `timeout` allows: split the work into shorter steps"
        return f"timed out after {timeout:g} s; the command was killed; {raise_it}"
    if outcome.ended == "cancelled":
        return "cancelled; the command was killed"
    if outcome.ended == "killed":
        return "killed: all running commands were stopped"
    code = outcome.returncode
    if code is not None and code < 0:
        return f"killed by signal {_signal_name(-code)}"
    return f"exit code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
