"""Why a call did not run, and what would let it, for the person who reads a run that
nobody answers (`codecoder exec`, issue 29 item 6).

The model reads the policy's reason, written for it ("don't retry it"). The person needs
other things: which rule or mode stopped the call, that it asked and nobody could answer,
and a way to allow it that will take effect. That last part is where people go wrong: a
rule in the project's `.codecoder/config.toml` counts only once the folder is trusted,
and its allow rules only as the set approved with `codecoder trust` (permissions/trust.py);
a user rule always counts; a deny rule wins over every allow rule; read-only refuses every
change whatever the rules say.
"""

from __future__ import annotations

import msgspec

from codecoder.approval import ApprovalMode
from codecoder.kernel.ports import Decision


class Refusal(msgspec.Struct, frozen=True):
    """A call the policy refused or asked about, with what would let it run."""

    decision: Decision
    """As decided, before never-ask turned an ask into a deny."""
    reason: str
    """The decision's reason as a person reads it (the model's carries advice for it)."""
    mode: ApprovalMode
    command: str | None
    """The command line of a run_command call."""
    rules: tuple[str, ...]
    """Allow rules that together would let it run; none when a rule cannot."""
    modes: tuple[ApprovalMode, ...]
    """Approval modes that would let it run without asking, narrowest first."""
    trusted: bool
    held_back: bool
    """The folder is trusted but its allow rules are not applied (not approved as they
    are now)."""
    user_file: str
    project_dir: str


def unattended_lines(refusal: Refusal) -> list[str]:
    """What `exec` prints under a refused call: why, then how to allow it."""
    decision = refusal.decision
    lines = [f"why: {refusal.reason}"]
    if decision.verdict == "ask":
        lines.append(f"it asks, and nobody can answer in exec (approval mode {refusal.mode})")
    if decision.verdict == "deny":
        if decision.level in ("user", "project"):
            lines.append("to allow it: remove or narrow that deny rule (a deny rule wins)")
        elif decision.level == "mode" and refusal.mode == "read-only":
            lines.append("to allow it: run with another --approval mode")
        return lines
    if decision.level in ("user", "project") and decision.rule:
        lines.append("to allow it: remove or narrow that ask rule (it asks in every mode)")
        return lines
    if refusal.modes:
        lines.append(f"to allow it: run with --approval {refusal.modes[0]} (it allows this)")
    if not refusal.rules:
        lines.append(
            "no rule can allow it, only an answer: in `codecoder`, or "
            "`exec --approval ask --json --stdin-replies` for a program that answers"
        )
        return lines
    quoted = ", ".join(f'"{rule}"' for rule in refusal.rules)
    lead = "or" if refusal.modes else "to allow it:"
    lines.append(f"{lead} add {quoted} to [permissions] allow in {refusal.user_file}")
    lines.append(_project_note(refusal))
    return lines


def _project_note(refusal: Refusal) -> str:
    """Whether a project rule would count, and what it needs first."""
    where = f"{refusal.project_dir}/config.toml"
    if not refusal.trusted:
        return (
            f"(a rule in {where} would not count: this folder is not trusted; "
            "`codecoder trust` trusts it and approves its allow rules)"
        )
    now = "; its allow rules are not approved now" if refusal.held_back else ""
    return (
        f"(a rule in {where} counts only once approved: run `codecoder trust` after adding it{now})"
    )
