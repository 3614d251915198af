"""The agent's questions: a confirmation shows exactly what it approves, then a menu of
one-key answers; an AskUser shows its choices and takes a number or free text.

A question is put to the user only once they have stopped typing (`ARM_AFTER`): keys
already on their way when it appeared go to the message being typed, never into the
answer. After that, a menu is answered by one key on its own: a key with another within
`ARM_AFTER` before or after it is text being typed ("yes please" must not approve with
its `y`), and so is a key that came in one read with others (a paste). Any key that is
not an answer asks again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

import msgspec

from codecoder.cli.tui import describe
from codecoder.cli.tui.diffs import Diff, proposed
from codecoder.cli.tui.text import safe_line
from codecoder.kernel.events import AskUser, ConfirmReply, ConfirmRequest, Decision
from codecoder.terminal_text import visible

ARM_AFTER = 0.4
"""Seconds without a keystroke (and since it appeared) before a question takes keys."""

CHOICES: tuple[tuple[str, str, Decision], ...] = (
    ("y", "allow once", "allow_once"),
    ("a", "always, this session", "allow_session"),
    ("p", "always, this project", "allow_project"),
    ("n", "deny", "deny"),
    ("m", "deny, with a message to the model", "deny"),
    ("d", "deny, for the rest of the session", "deny_session"),
)
UNTRUSTED = "(saved now; in later sessions it applies once you /trust this folder)"
ONE_KEY = "one key on its own answers"
TYPED = "typed text is not an answer: press one key on its own"


class Question(msgspec.Struct):
    event: ConfirmRequest | AskUser
    shown_at: float = msgspec.field(default_factory=time.monotonic)
    mode: Literal["menu", "message", "answer", "gitignore"] = "menu"
    complaint: str = ""
    diff: Diff | None = None
    approves: list[str] | None = None
    """The lines saying what a confirmation approves (worked out on the pump thread)."""
    settled: bool = False
    """It has taken keys once (the user stopped typing): it goes on taking them."""
    keys: int = 0
    """Keys pressed at its menu so far: a key is an answer when none follows it."""

    @property
    def confirm(self) -> bool:
        return isinstance(self.event, ConfirmRequest)

    def armed(self, last_key: float, now: float) -> bool:
        """Once the user stopped typing after it appeared; then for good."""
        if not self.settled:
            self.settled = now - self.shown_at >= ARM_AFTER and now - last_key >= ARM_AFTER
        return self.settled

    def choose(self, key: str) -> Decision | Literal["message"] | None:
        """The decision a menu key stands for; None for a key that is not one."""
        for letter, _, decision in CHOICES:
            if key.lower() == letter:
                return "message" if letter == "m" else decision
        return None

    def answer(self, decision: Decision, message: str | None = None) -> bool:
        assert isinstance(self.event, ConfirmRequest)
        return self.event.reply.send(ConfirmReply(decision, message))

    def reply(self, text: str) -> bool:
        """An AskUser's answer: a choice's number means that choice."""
        assert isinstance(self.event, AskUser)
        options = self.event.options
        stripped = text.strip()
        if stripped.isdigit() and 0 < int(stripped) <= len(options):
            stripped = options[int(stripped) - 1]
        return self.event.reply.send(stripped)

    def dismiss(self, why: str) -> None:
        """The turn ended or was cancelled: nobody waits for an answer any more."""
        if isinstance(self.event, ConfirmRequest):
            self.event.reply.send(ConfirmReply("deny", why, by_person=False))
        else:
            self.event.reply.send(f"({why})")


def what_it_approves(event: ConfirmRequest, workspace: Path) -> tuple[list[str], Diff | None]:
    """The lines that say exactly what the call would do (the full command; the path;
    for an edit or a write, its diff, returned apart to be coloured)."""
    call = event.tool_call
    args = call.args
    label = describe.label(call.name)
    if call.name == "run_command":
        command = args.get("command")
        text = command if isinstance(command, str) else describe.arguments(call.name, args)
        lines = [f"? {label} this command ({call.name}):"]
        lines += [
            f"  $ {line}" if i == 0 else f"    {line}"
            for i, line in enumerate(visible(text).split("\n"))
        ]
        where = args.get("cwd")
        if isinstance(where, str):
            lines.append(f"  in {safe_line(where)}")
    elif call.name in ("edit_file", "write_file"):
        path = safe_line(str(args.get("path")))
        lines = [f"? {label} {path} ({call.name})"]
    elif call.raw_args is None and describe.mcp_parts(call.name) is not None:
        lines = [f"? {label} (MCP)"]  # the label is the server and the tool already
        lines += [f"  {line}" for line in describe.argument_lines(args)]
    elif call.raw_args is not None:
        lines = [f"? {label} ({call.name}), arguments that are not valid JSON:"]
        lines.append(f"  {safe_line(call.raw_args)}")
    else:
        lines = [f"? {label} ({call.name}): {describe.arguments(call.name, args)}"]
    if event.reason:
        lines.append(f"  why it asks: {safe_line(event.reason)}")
    diff = (
        proposed(call.name, args, workspace) if call.name in ("edit_file", "write_file") else None
    )
    if call.name == "write_file" and diff is not None:
        lines[0] += " — a new file" if diff.created else " — replaces the whole file"
    return lines, diff


def menu(question: Question, *, trusted: bool | None) -> list[tuple[str, str]]:
    """The menu as (style, text) fragments for prompt_toolkit, one answer a line."""
    out: list[tuple[str, str]] = [("class:question", "Allow it?"), ("class:queued", f"  {ONE_KEY}")]
    for letter, text, _ in CHOICES:
        note = f"  {UNTRUSTED}" if letter == "p" and trusted is False else ""
        out += [("", "\n  "), ("class:key", letter), ("", f"  {text}"), ("class:queued", note)]
    if question.complaint:
        out.append(("class:complaint", f"\n{question.complaint}"))
    return out


def ask_lines(event: AskUser) -> list[str]:
    lines = [f"? {safe_line(event.question)}"]
    lines += [f"  {n}. {safe_line(option)}" for n, option in enumerate(event.options, 1)]
    return lines
