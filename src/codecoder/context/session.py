"""The last section of the system prompt: what this session lets the model do.

A model that is not told its approval mode plans edits it cannot make, asks questions
nobody will answer, and reads a refusal as a hiccup to retry. So the session says, as
Codex does each session: the approval mode and what runs without asking; whether what
needs approval can get it (someone is there to answer, and the mode asks); how commands
are confined and whether they have the network; whether anyone can answer a question.
The approval mode can change during a session (a client's `session/set_mode`), so the
section is the last of the prompt: a switch leaves the cached prefix before it intact.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from codecoder.approval import ApprovalMode
from codecoder.sandbox import SandboxMode

Network = Literal["off", "some", "on"]
"""The network of confined commands: none, only for commands the user allows, all."""


class SessionFacts(msgspec.Struct, frozen=True):
    """What the section is made from, as it stands for the next request."""

    mode: ApprovalMode
    attended: bool
    """Someone can answer a question or approve a call (an interactive client, an
    editor; `exec` only with replies on stdin)."""
    sandbox: SandboxMode = "off"
    """How a command started now is confined."""
    network: Network = "off"
    tools: frozenset[str] | None = None
    """The tools offered now, by name (None: every tool); they follow the mode."""

    @property
    def answered(self) -> bool:
        """Whether a call that needs approval can get it: never-ask turns every question
        into a refusal, and without a person nobody answers one."""
        return self.attended and self.mode != "never-ask"


_RUNS_UNASKED: dict[ApprovalMode, str] = {
    "ask": "Reading, searching and commands that only read (ls, cat, grep, git status …)",
    "auto-edit": "Reading, searching, file edits inside the workspace and commands that only read",
    "full-auto": "Reading, searching, and edits and commands inside the workspace",
    "read-only": "Reading, searching and commands that only read (ls, cat, grep, git status …)",
    "never-ask": "Reading, searching and commands that only read (ls, cat, grep, git status …)",
}

_CONFINED: dict[SandboxMode, str] = {
    "off": "Commands run without a sandbox, with the user's rights.",
    "workspace-write": (
        "Commands run in a sandbox: they can write only the workspace (not .git or "
        ".codecoder) and /tmp"
    ),
    "read-only": "Commands run in a read-only sandbox: they can write only /tmp",
}

_NETWORK: dict[Network, str] = {
    "off": "; the network is off.",
    "some": "; the network is off but for commands the user allows.",
    "on": "; the network is on.",
}

DESCRIBE_INSTEAD = (
    "describe them (path:line and the new text) in your answer instead of making them"
)


def describe(facts: SessionFacts) -> str:
    """The section for `facts`."""
    tools = facts.tools
    lines = ["# This session", f"Approval mode: {facts.mode}."]
    runs = _RUNS_UNASKED[facts.mode]
    if facts.mode == "read-only":
        lines.append(
            f"{runs} run; nothing that changes anything can. If the task needs changes, "
            f"{DESCRIBE_INSTEAD}."
        )
    else:
        rest = (
            "waits for the user's approval, which may be refused"
            if facts.answered
            else "is refused: nobody can approve it in this run"
        )
        lines.append(
            f"{runs} run without asking, as does what the user's permission rules allow; "
            f"anything else {rest}."
        )
        if tools is not None and "edit_file" not in tools and "write_file" not in tools:
            lines.append(
                f"No tool here edits files: if the task needs changes, {DESCRIBE_INSTEAD}."
            )
    if tools is None or "run_command" in tools:
        lines.append(_commands(facts))
    if facts.answered:
        lines.append(
            "If the request is ambiguous or risky, ask the user one short question instead "
            "of guessing."
        )
    else:
        lines.append(
            "Nobody can answer questions in this run: don't ask or wait for confirmation; "
            "make reasonable assumptions, finish the task, and say what you assumed."
        )
    return "\n".join(lines)


def _commands(facts: SessionFacts) -> str:
    text = _CONFINED[facts.sandbox]
    if facts.sandbox == "off":
        return text
    text += _NETWORK[facts.network]
    if facts.answered:
        text += " If the sandbox blocks what a command needs, run it again with `sandbox: false`; "
        text += "the user is asked first."
    return text
