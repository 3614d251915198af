"""What a task's `exec --json` output says, folded into the facts a result line needs:
tokens and cost (sub-agents' included), the gates of a plan, how the run ended. A pure
function over the lines (docs/headless.md), so a run on any machine is read the same.

Lines are decoded as plain objects, not as the `cli.jsonl` structs: an exec that crashed
mid-line, or a newer exec with line types we do not know, must still give a result.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from codecoder.batch.results import Gate, Tokens


class RunOutput(msgspec.Struct):
    session_id: str | None = None
    tokens: Tokens = msgspec.field(default_factory=Tokens)
    cost: float | None = None
    costs_known: bool = True
    """False once a usage line had no price: the total is then unknown (null)."""
    gates: list[Gate] = msgspec.field(default_factory=list)
    error: str | None = None
    """The message of the last `error` line: what ended a failed turn."""
    plan_status: str | None = None
    """`plan_finished.status` of a plan run."""

    def total_cost(self) -> float | None:
        return self.cost if self.costs_known else None


def fold(lines: Iterable[bytes]) -> RunOutput:
    out = RunOutput()
    attempt: dict[str, int] = {}
    for raw in lines:
        try:
            line = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            continue  # a line cut short by a killed exec
        if not isinstance(line, dict):
            continue
        kind = line.get("type")
        if kind == "session":
            out.session_id = line.get("session_id")
        elif kind == "milestone_started":
            attempt[line["milestone"]] = line["attempt"]
        elif kind == "gate_finished":
            out.gates.append(_gate(line, attempt.get(line["milestone"], 1)))
        elif kind == "plan_finished":
            out.plan_status = line.get("status")
        elif kind == "error":
            out.error = line.get("message")
        _usage(out, line)
    return out


def _usage(out: RunOutput, line: dict[str, object]) -> None:
    """A usage line, also one wrapped in `subagent` lines (a sub-agent's tokens are the
    task's too)."""
    while line.get("type") == "subagent" and isinstance(line.get("event"), dict):
        line = line["event"]  # type: ignore[assignment]
    if line.get("type") != "usage":
        return
    tokens = out.tokens
    tokens.input += _int(line.get("input_tokens"))
    tokens.output += _int(line.get("output_tokens"))
    tokens.cached += _int(line.get("cached_tokens"))
    tokens.reasoning += _int(line.get("reasoning_tokens"))
    cost = line.get("cost")
    if isinstance(cost, int | float):
        out.cost = (out.cost or 0.0) + cost
    else:
        out.costs_known = False


def _gate(line: dict[str, object], attempt: int) -> Gate:
    return Gate(
        milestone=str(line.get("milestone")),
        attempt=attempt,
        index=_int(line.get("index")),
        command=str(line.get("command")),
        exit_code=line.get("exit_code") if isinstance(line.get("exit_code"), int) else None,  # type: ignore[arg-type]
        duration_ms=_int(line.get("duration_ms")),
        output_tail=str(line.get("output_tail", "")),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
