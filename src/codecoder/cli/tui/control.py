"""Steering and undo in the terminal client (issue 18; docs/control.md, docs/undo.md).

During a turn, what is typed goes one of two ways, and the screen says which:

- Enter queues it: it is the next message, sent once the turn is over (`⏎ queued: …`
  above the input, as before).
- Ctrl+G, or `/steer TEXT`, steers: the text joins the running turn at its next round
  boundary, after the step running now (`⇢ steer sent`, then the view's `↪ joined the
  turn: …`). A turn that ends before such a boundary takes it as the next turn's message
  (`↪ for the next turn: …`); the client stays busy through that turn, as it would for
  a queued message. With no turn running, a steer is sent as a message.

`/undo [N] [--with-history] [--force] [--dry-run]` puts back the files a turn of this
session changed (its last that changed files, else turn N) and shows the diff of what it
restored; `/redo` puts back what the last undo took away. `--with-history` also rewinds
the conversation: the client goes on in a fork of the session that ends before the turn.
Both run once the turn is over (a running turn's files are still changing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from codecoder.cli.tui.slash import Host, Registry, SlashCommand
from codecoder.cli.tui.text import cut, safe_line
from codecoder.kernel.events import AgentEvent, Done, Steered

if TYPE_CHECKING:
    from prompt_toolkit.buffer import Buffer

    from codecoder.cli.tui.backend import Backend


class Client(Protocol):
    """What steering needs of the client (cli/tui/app.py)."""

    busy: str

    @property
    def backend(self) -> Backend | None: ...

    def say(self, text: str, *styles: str) -> None: ...

    def submit(self, text: str, shown: str) -> None: ...

    def expand(self, text: str) -> str: ...

    def flush(self) -> None: ...


class Steering:
    """Steers the running turn, and keeps the client busy through a turn that a steer
    too late for its own turn starts."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.follow_ups = 0

    def steer_input(self, buffer: Buffer) -> None:
        """Ctrl+G: steer with what is typed."""
        text = buffer.text
        if not text.strip():
            self.client.say("type what the turn should hear, then Ctrl+G (Enter queues it)", "dim")
            self.client.flush()
            return
        buffer.append_to_history()
        buffer.reset()
        self.steer(text)

    def steer(self, text: str) -> None:
        client = self.client
        backend = client.backend
        first = safe_line(text.strip().split("\n")[0])
        if backend is None or client.busy != "turn":
            why = "a plan is running" if client.busy == "plan" else "no turn is running"
            client.say(f"{why}: sent as a message instead", "dim")
            client.submit(text, text)
            client.flush()
            return
        try:
            cast(Any, backend.handle).steer(client.expand(text))
        except Exception as exc:  # the agent ended, the daemon went away: said as it is
            client.say(f"could not steer: {exc}", "red")
        else:
            client.say(f"⇢ steer sent, joins the turn after its current step: {cut(first, 60)}")
        client.flush()

    def observe(self, event: AgentEvent, backend: Backend) -> None:
        """A steer too late for its turn starts the next one in the same session; in
        this process its Done comes to us, so the client stays busy until then (a daemon
        answers a turn to the client that prompted it, and a steer's turn to nobody)."""
        if isinstance(event, Steered) and event.next_turn and not backend.remote:
            self.follow_ups += 1

    def goes_on(self, event: AgentEvent) -> bool:
        """On a Done: whether a turn a steer started follows (the client stays busy)."""
        if isinstance(event, Done) and self.follow_ups:
            self.follow_ups -= 1
            return True
        return False


def register(registry: Registry) -> None:
    registry.add(
        SlashCommand(
            "steer",
            "redirect the running turn now (Ctrl+G with what is typed); Enter queues",
            _steer,
            usage="TEXT",
        )
    )
    registry.add(
        SlashCommand(
            "undo",
            "put back the files a turn changed (the last that did, else turn N)",
            lambda host, arguments: _undo(host, arguments, redo=False),
            usage="[N] [--with-history] [--force] [--dry-run]",
            busy="after",
        )
    )
    registry.add(
        SlashCommand(
            "redo",
            "put back what the last /undo took away",
            lambda host, arguments: _undo(host, arguments, redo=True),
            busy="after",
        )
    )


def _steer(host: Host, arguments: str) -> None:
    steering: Steering | None = getattr(host, "steering", None)
    if not arguments.strip():
        host.say("/steer TEXT: TEXT joins the running turn at its next step", "yellow")
        return
    if steering is not None:
        steering.steer(arguments)


def _undo(host: Host, arguments: str, *, redo: bool) -> None:
    backend = host.backend
    if backend is None:
        host.say("the session is still starting; try again in a moment", "yellow")
        return
    options: dict[str, Any] = {"redo": redo}
    for word in arguments.split():
        flag = {"--with-history": "with_history", "--force": "force", "--dry-run": "dry_run"}
        if word in flag:
            options[flag[word]] = True
        elif word.isdigit() and not redo:
            options["turn"] = int(word)
        else:
            host.say(f"/{'redo' if redo else 'undo'}: what is {word!r}?", "yellow")
            return
    if redo and options.get("with_history"):
        host.say("--with-history rewinds with /undo, not /redo", "yellow")
        return
    try:
        result = backend.undo(**options)
    except Exception as exc:  # nothing to undo, no such turn, the daemon refused
        host.say(str(getattr(exc, "message", exc)), "yellow")
        return
    _show(host, result)
    fork = result.get("forkSessionId")
    if fork:
        host.replace_backend(lambda old: old.resumed(str(fork)), "rewinding the conversation")


def _show(host: Host, result: dict[str, Any]) -> None:
    direction = str(result.get("direction", "undo"))
    turn = result.get("turn")
    if not result.get("done"):
        from codecoder.checkpoints.restore import refusal  # loaded with the first undo

        conflicts = result.get("conflicts", [])
        kinds = (str(c.get("kind", "changed")) for c in conflicts)
        headline, hint = refusal(kinds, direction)
        host.say(f"{headline} (nothing was restored):", "red")
        for conflict in conflicts:
            host.say(f"  {conflict.get('path')}: {conflict.get('why')}", "red")
        if hint is not None:
            host.say(f"/{direction} --force overwrites them", "dim")
        return
    for line in str(result.get("diff", "")).splitlines():
        style = "dim"
        if line.startswith("+") and not line.startswith("+++"):
            style = "green"
        elif line.startswith("-") and not line.startswith("---"):
            style = "red"
        host.say(line, style)
    files = ", ".join(f"{f.get('path')} ({f.get('action')})" for f in result.get("files", []))
    verb = {"undo": "undid", "redo": "redid"}.get(direction, direction)
    if result.get("dryRun"):
        verb = f"would {direction}"
    host.say(f"{verb} turn {turn}: {files}", "bold")
    if direction == "undo" and not result.get("dryRun") and not result.get("forkSessionId"):
        host.say("/redo puts it back; the conversation goes on (--with-history rewinds it)", "dim")
