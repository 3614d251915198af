"""The agent's questions in the client, one at a time (questions.py has what each says):
a confirmation prints what it approves and shows its menu; an AskUser its choices and an
answer line. A question takes keys only once the user has stopped typing, and a menu
only a key on its own (questions.py); an answer goes into the question's oneshot, and the
next question, if any, comes up."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

from codecoder.cli.tui.diffs import Diff
from codecoder.cli.tui.questions import ARM_AFTER, TYPED, Question, ask_lines, menu
from codecoder.cli.tui.text import safe_line
from codecoder.kernel.events import AskUser, ConfirmRequest

if TYPE_CHECKING:
    from codecoder.cli.tui.app import Client


class Asking:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.queue: deque[Question] = deque()

    @property
    def head(self) -> Question | None:
        return self.queue[0] if self.queue else None

    def resolved(self, call_id: str) -> None:
        """Another client of a daemon session answered the question of `call_id` (an
        AskUser has no call id of its own here: the first one goes)."""
        for question in list(self.queue):
            asked = question.event
            asked_id = asked.tool_call.id if isinstance(asked, ConfirmRequest) else ""
            if asked_id != call_id and (asked_id or not isinstance(asked, AskUser)):
                continue
            was_head = question is self.head
            question.dismiss("answered elsewhere")
            self.queue.remove(question)
            self.client.view.approved(call_id)
            self.client.view.line("  → answered by another client", "dim")
            if was_head:
                screen = self.client.screen
                screen.answer.reset()
                screen.app.layout.focus(screen.input)
                if self.head is not None:
                    self.show(self.head)
            return

    def dismiss_all(self, why: str) -> None:
        """The turn ended or was stopped: nobody waits for these answers any more."""
        for question in self.queue:
            question.dismiss(why)
        self.queue.clear()

    def ask(
        self, event: ConfirmRequest | AskUser, diff: Diff | None, approves: list[str] | None
    ) -> None:
        """A new question: shown at once when it is the only one, else after the others."""
        question = Question(event, diff=diff, approves=approves)
        if isinstance(event, AskUser):
            question.mode = "answer"
        self.queue.append(question)
        if len(self.queue) == 1:
            self.show(question)

    def show(self, question: Question) -> None:
        """Print what the question is about; it takes keys once the typing stops."""
        question.shown_at = time.monotonic()
        event = question.event
        if isinstance(event, ConfirmRequest):
            for index, line in enumerate(question.approves or []):
                self.client.view.note(
                    line, "bold", "yellow"
                ) if index == 0 else self.client.view.line(line)
            if question.diff is not None:
                self.client.view.diff_lines(question.diff)
                self.client.view.diffs_shown.add(event.tool_call.id)
        else:
            lines = ask_lines(event)
            self.client.view.note(lines[0], "bold", "yellow")
            for line in lines[1:]:
                self.client.view.line(line)
        self.client._flush()
        loop = self.client.screen.app.loop
        if loop is not None:
            loop.call_later(ARM_AFTER + 0.02, self._arm)

    def _arm(self) -> None:
        """Once the user has stopped typing, the question takes the keys."""
        question = self.head
        if question is None:
            return
        now = time.monotonic()
        if not question.armed(self.client.last_key, now):
            loop = self.client.screen.app.loop
            if loop is not None:
                loop.call_later(0.1, self._arm)
            return
        if question.mode in ("answer", "message"):
            self.client.screen.answer.reset()
            self.client.screen.app.layout.focus(self.client.screen.answer)
        self.client.screen.app.invalidate()

    def menu_armed(self) -> bool:
        question = self.head
        return (
            question is not None
            and question.confirm
            and question.mode in ("menu", "gitignore")
            and question.armed(self.client.last_key, time.monotonic())
        )

    def answering(self) -> bool:
        question = self.head
        return question is not None and question.mode in ("answer", "message")

    def menu_key(self, key: str, *, alone: bool = True) -> None:
        """A key at the menu. It answers only if it came on its own (`alone`: no other
        key in the same read) with no key within ARM_AFTER before it, and none follows
        within ARM_AFTER: so it is taken after that wait."""
        question = self.head
        if question is None:
            return
        question.keys += 1
        now = time.monotonic()
        if not alone or now - self.client.last_key < ARM_AFTER:
            question.complaint = TYPED + (" (y or n)" if question.mode == "gitignore" else "")
            self.client.screen.app.output.bell()
            self.client.screen.app.invalidate()
            return
        loop = self.client.screen.app.loop
        if loop is None:
            self._take_key(question, key)
            return
        count, pressed = question.keys, self.client.key_presses
        loop.call_later(ARM_AFTER, lambda: self._key_alone(question, key, count, pressed))

    def _key_alone(self, question: Question, key: str, count: int, pressed: int) -> None:
        """ARM_AFTER after `key`: it answers if no key came since (any key: `y` then
        Backspace, an arrow, Tab or Enter is no answer, though those keys have bindings
        of their own and never reach the menu) and the question still waits at its menu."""
        if question is not self.head or question.mode == "message":
            return
        if question.keys != count or self.client.key_presses != pressed:
            question.complaint = TYPED + (" (y or n)" if question.mode == "gitignore" else "")
            self.client.screen.app.invalidate()
            return
        self._take_key(question, key)

    def _take_key(self, question: Question, key: str) -> None:
        if question.mode == "gitignore":
            if key.lower() in ("y", "n"):
                self._gitignore_answer(question, key.lower() == "y")
            else:
                question.complaint = "press y or n"
            self.client.screen.app.invalidate()
            return
        choice = question.choose(key)
        if choice is None:
            question.complaint = (
                f"{safe_line(key)!s} is not an answer: press y, a, p, n, m or d "
                "(Ctrl+C stops the turn)"
            )
            self.client.screen.app.output.bell()
            self.client.screen.app.invalidate()
            return
        if choice == "message":
            question.mode = "message"
            question.complaint = ""
            self.client.screen.answer.reset()
            self.client.screen.app.layout.focus(self.client.screen.answer)
            self.client.screen.app.invalidate()
            return
        if choice == "allow_project" and self._needs_gitignore_answer():
            question.mode = "gitignore"
            question.complaint = ""
            self.client.screen.app.invalidate()
            return
        self._decide(question, choice)

    def _needs_gitignore_answer(self) -> bool:
        """The first project rule creates .codecoder/config.local.toml, which goes into
        .gitignore; where that would change a file git tracks, the user says whether."""
        backend = self.client.backend
        policy = backend.policy if backend is not None else None
        if policy is None:
            return False
        from codecoder import paths
        from codecoder.permissions.tomlfile import ignore_plan

        if (paths.project_dir(self.client.workspace) / "config.local.toml").exists():
            return False
        return ignore_plan(self.client.workspace) == "tracked"

    def _gitignore_answer(self, question: Question, edit: bool) -> None:
        backend = self.client.backend
        if backend is not None and backend.policy is not None:
            backend.policy.edit_tracked_gitignore = edit
        self._decide(question, "allow_project")

    def _decide(self, question: Question, decision: Any, message: str | None = None) -> None:
        question.answer(decision, message)
        assert isinstance(question.event, ConfirmRequest)
        self.client.view.approved(question.event.tool_call.id)
        words = {
            "allow_once": "allowed once",
            "allow_session": "allowed for this session",
            "allow_project": "allowed for this project (.codecoder/config.local.toml)",
            "deny": "denied",
            "deny_session": "denied for the rest of the session",
        }[decision]
        if message:
            words += f": {safe_line(message)}"
        self.client.view.line(f"  → {words}", "dim")
        self._done()

    def submit_answer(self, text: str) -> None:
        question = self.head
        if question is None:
            return
        if question.mode == "message":
            if not text.strip():
                question.complaint = "type what to tell the model, or Esc for the menu"
                self.client.screen.app.invalidate()
                return
            self._decide(question, "deny", text.strip())
            return
        if not text.strip():
            question.complaint = "type an answer (or the number of a choice)"
            self.client.screen.app.invalidate()
            return
        question.reply(text)
        self.client.view.line(f"  → {safe_line(text.strip())}", "dim")
        self._done()

    def escape(self) -> None:
        question = self.head
        if question is not None and question.mode == "message":
            question.mode = "menu"
            question.complaint = ""
            self.client.screen.app.layout.focus(self.client.screen.input)
            self.client.screen.app.invalidate()

    def _done(self) -> None:
        self.queue.popleft()
        self.client.screen.answer.reset()
        self.client.screen.app.layout.focus(self.client.screen.input)
        following = self.head
        if following is not None:
            self.show(following)
        self.client._flush()

    def fragments(self) -> list[tuple[str, str]]:
        question = self.head
        if question is None:
            return []
        armed = question.armed(self.client.last_key, time.monotonic())
        if question.mode == "gitignore":
            out = [
                ("", "Project rules go to .codecoder/config.local.toml; git should not see it.\n"),
                ("class:question", "Add it to .gitignore (a file git tracks)?"),
                ("", "\n  "),
                ("class:key", "y"),
                ("", "  yes\n  "),
                ("class:key", "n"),
                ("", "  no: write .codecoder/.gitignore instead"),
            ]
        elif question.mode == "menu":
            backend = self.client.backend
            trusted = backend.policy.trusted if backend and backend.policy else None
            out = menu(question, trusted=trusted)
        elif question.mode == "message":
            out = [("class:question", "Deny, and tell the model (Enter sends, Esc goes back):")]
        else:
            out = [("class:question", "Your answer (a number, or your own words; Enter sends):")]
        if question.complaint and question.mode != "menu":
            out.append(("class:complaint", f"\n{question.complaint}"))
        if not armed:
            out.append(("class:queued", "\n(waiting for you to stop typing)"))
        return out

    def prompt(self) -> str:
        return "✎ " if self.head is not None and self.head.mode == "message" else "? "
