"""The built-in slash commands. Each says what it did; what a daemon session cannot do
is said plainly (backend.Unavailable)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from codecoder import paths
from codecoder.cli.tui.backend import Backend
from codecoder.cli.tui.slash import Host, Registry, SlashCommand

if TYPE_CHECKING:
    from codecoder.permissions.rules import RuleSet
    from codecoder.providers.available import ModelChoice

KEYS = [
    ("Enter", "send (during a turn: queue it as the next message)"),
    ("Ctrl+G", "during a turn: steer it now with what is typed (/steer TEXT)"),
    ("Alt+Enter, Ctrl+J", "a new line (a paste is one message however many lines)"),
    ("@path", "attach a file (Tab completes paths)"),
    ("Ctrl+C", "stop the turn; at an empty prompt, twice to leave"),
    ("Ctrl+D", "leave (at an empty prompt)"),
    ("Ctrl+O / Ctrl+T", "the last command's whole output / the last reasoning"),
    ("Ctrl+L", "clear the screen"),
]
APPROVAL_HELP = {
    "ask": "what no rule allows is asked",
    "auto-edit": "file edits in the workspace are allowed; commands ask",
    "full-auto": "everything inside the workspace is allowed; outside asks",
    "read-only": "only reads; everything else is denied",
    "never-ask": "what would ask is denied (with a reason the model sees)",
}


def register(registry: Registry) -> None:
    for command in (
        SlashCommand("help", "commands and keys", _help),
        SlashCommand(
            "model",
            "pick a model usable now (all: every model), or switch for the next turn",
            _model,
            usage="[PROVIDER/MODEL | all]",
            busy="after",
            arguments=lambda host: [*_MODELS.usable(), "all"],
        ),
        SlashCommand(
            "approval",
            "show or set the approval mode",
            _approval,
            usage="[MODE]",
            arguments=lambda host: list(APPROVAL_HELP),
        ),
        SlashCommand("compact", "summarise the history now", _compact, busy="after"),
        SlashCommand("sessions", "this folder's sessions", _sessions),
        SlashCommand(
            "resume",
            "go on with another session (no id: pick one)",
            _resume,
            usage="[ID]",
            busy="after",
            arguments=_session_ids,
        ),
        SlashCommand("new", "start a new session", _new, busy="after"),
        SlashCommand("clear", "clear the screen (the conversation goes on)", _clear),
        SlashCommand("cost", "tokens and cost of this session", _cost),
        SlashCommand(
            "plan",
            "run a plan file's milestones, each checked by its gates (docs/plans.md)",
            lambda host, arguments: host.run_plan(arguments),
            usage="PLAN.toml",
            busy="after",
        ),
        SlashCommand("permissions", "the rules in force and where each comes from", _permissions),
        SlashCommand("trust", "apply this folder's .codecoder/ settings", _trust),
        SlashCommand("exit", "leave (a daemon session goes on)", _exit, aliases=("quit",)),
    ):
        registry.add(command)


def _help(host: Host, arguments: str) -> None:
    lines = ["**Commands** (handled here, never sent to the model)", ""]
    for command in host.registry():
        usage = f" {command.usage}" if command.usage else ""
        where = "" if command.source == "built-in" else f" *({command.source})*"
        lines.append(f"- `/{command.name}{usage}` — {command.summary}{where}")
    lines += ["", "**Keys**", ""]
    lines += [f"- `{key}` — {what}" for key, what in KEYS]
    lines += [
        "",
        "Custom commands: Markdown prompts in `.codecoder/commands/NAME.md` or "
        "`~/.config/codecoder/commands/NAME.md` (`$ARGUMENTS` is what follows `/NAME`).",
    ]
    host.say_markdown("\n".join(lines))


def _backend(host: Host) -> Backend | None:
    backend = host.backend
    if backend is None:
        host.say("the session is still starting; try again in a moment", "yellow")
    return backend


def _model(host: Host, arguments: str) -> None:
    """No argument: the models usable now (a key set, a local server listening) in the
    completion pop-up, a picker of what would work at the next turn; `all` lists the
    others with why each cannot be used, so none is offered that fails at the first turn
    and none is hidden."""
    backend = _backend(host)
    if backend is None:
        return
    if arguments.strip() == "all":
        lines = [f"model: **{backend.model}**", ""]
        for choice in _MODELS.choices(fresh=True):
            current = " (current)" if choice.spec == backend.model else ""
            why = f" — {choice.why_not}" if choice.why_not else ""
            lines.append(f"- `{choice.spec}`{current}{why}")
        lines += ["", "`/model PROVIDER/MODEL` switches for the next turn."]
        host.say_markdown("\n".join(lines))
        return
    if not arguments:
        choices = _MODELS.choices(fresh=True)
        usable = [c.spec for c in choices if not c.why_not]
        others = len(choices) - len(usable)
        more = f"; {others} more need a key or a server: `/model all`" if others else ""
        if not usable:
            host.say_markdown(
                f"model: **{backend.model}** — no other model can be used now (no API key "
                f"set, no local server){more}; `codecoder doctor` checks providers and keys."
            )
            return
        host.say_markdown(
            f"model: **{backend.model}** — pick one usable now (Tab or ↑↓, Enter, Enter "
            f"again to switch){more}"
        )
        host.pick("/model ")
        return
    spec = arguments.split(maxsplit=1)[0]
    host.replace_backend(lambda old: old.with_model(spec), f"switching to {spec}")


class _ModelChoices:
    """The models and whether each is usable, probed at most every CACHE_SECONDS: the
    completion asks at each keystroke, a probe of a local server takes up to 0.3 s."""

    CACHE_SECONDS = 10.0

    def __init__(self) -> None:
        self._choices: list[ModelChoice] = []
        self._at = -self.CACHE_SECONDS

    def choices(self, *, fresh: bool = False) -> list[ModelChoice]:
        now = time.monotonic()
        if fresh or now - self._at >= self.CACHE_SECONDS:
            from codecoder.config import read_toml  # the provider registry: at first use
            from codecoder.providers.available import model_choices

            try:
                config = read_toml(paths.config_dir() / "config.toml")
                self._choices = model_choices(config)
            except Exception:  # a broken config has its own message at start-up
                self._choices = []
            self._at = now
        return self._choices

    def usable(self) -> list[str]:
        return [choice.spec for choice in self.choices() if not choice.why_not]


_MODELS = _ModelChoices()


def _approval(host: Host, arguments: str) -> None:
    backend = _backend(host)
    if backend is None:
        return
    if not arguments:
        lines = [f"approval mode: **{backend.mode}**", ""]
        lines += [f"- `{mode}` — {what}" for mode, what in APPROVAL_HELP.items()]
        lines += ["", "`/approval MODE` switches at once (the running turn too)."]
        host.say_markdown("\n".join(lines))
        return
    mode = arguments.split(maxsplit=1)[0]
    from codecoder.approval import MODES, ApprovalMode

    chosen: ApprovalMode | None = next((m for m in MODES if m == mode), None)
    if chosen is None:
        host.say(f"unknown approval mode {mode!r}; one of: {', '.join(MODES)}", "yellow")
        return
    try:
        backend.set_mode(chosen)
    except Exception as exc:  # Unavailable, an RpcError from the daemon: said as it is
        host.say(f"could not switch the approval mode: {exc}", "red")
        return
    host.say(f"approval mode: {chosen} — {APPROVAL_HELP[chosen]}", "dim")


def _compact(host: Host, arguments: str) -> None:
    if _backend(host) is not None:
        host.compact()


def _sessions(host: Host, arguments: str) -> None:
    from codecoder.sessions import SessionError, SessionStore
    from codecoder.sessions.export import age

    current = host.backend.session_id if host.backend is not None else ""
    try:
        with SessionStore() as store:
            sessions = store.list_sessions(host.workspace, limit=15)
    except SessionError as exc:
        host.say(str(exc), "red")
        return
    if not sessions:
        host.say("no sessions in this folder yet", "dim")
        return
    now = time.time()
    for info in sessions:
        mark = "•" if info.id == current else " "
        title = (info.title or "(untitled)")[:50]
        host.say(f"{mark} {info.id[:8]}  {age(now - info.updated_at):>9}  {info.model:<28} {title}")
    host.say("/resume ID goes on with one (its first 4 characters, where unique)", "dim")


def _session_ids(host: Host) -> list[str]:
    from codecoder.sessions import SessionError, SessionStore

    try:
        with SessionStore() as store:
            return [info.id[:8] for info in store.list_sessions(host.workspace, limit=30)]
    except SessionError:
        return []


def _resume(host: Host, arguments: str) -> None:
    """`/resume ID` switches to that session; with no id, a picker of this folder's
    other sessions that got an answer (picker.py), whose choice switches the same way."""
    if not arguments:
        _pick_session(host)
        return
    ref = arguments.split(maxsplit=1)[0]
    host.replace_backend(lambda old: old.resumed(ref), f"opening session {ref}")


def _pick_session(host: Host) -> None:
    from codecoder.cli.tui.picker import LIMIT
    from codecoder.sessions import SessionError, SessionStore

    current = host.backend.session_id if host.backend is not None else ""
    try:
        with SessionStore() as store:
            found = store.list_sessions(host.workspace, LIMIT + 1, answered_only=True)
    except SessionError as exc:
        host.say(str(exc), "red")
        return
    others = [info for info in found if info.id != current][:LIMIT]
    if not others:
        host.say("no other session of this folder to resume (/sessions lists them)", "dim")
        return

    def done(chosen: str | None) -> None:
        if chosen is None:
            host.say("no session chosen: this one goes on", "dim")
            return
        host.replace_backend(lambda old: old.resumed(chosen), f"opening session {chosen[:8]}")

    host.choose_session(others, done)


def _new(host: Host, arguments: str) -> None:
    host.replace_backend(lambda old: old.fresh(), "starting a new session")


def _clear(host: Host, arguments: str) -> None:
    host.clear()


def _cost(host: Host, arguments: str) -> None:
    host.say_block(host.usage_text().split("\n"))


def _exit(host: Host, arguments: str) -> None:
    host.quit()


def _trust(host: Host, arguments: str) -> None:
    from codecoder.config import ConfigError
    from codecoder.permissions.trust import approve_project, trust

    workspace = host.workspace
    try:
        changed = trust(workspace)
        approved = approve_project(workspace)
    except (OSError, ConfigError) as exc:
        host.say(f"could not trust {workspace}: {exc}", "red")
        return
    rules = f"; allow rules approved as they are now: {', '.join(approved)}" if approved else ""
    if not changed:
        host.say(f"{workspace} is already trusted: its .codecoder/ settings apply{rules}", "dim")
        return
    host.say(
        f"trusted {workspace}: its .codecoder/ settings apply from the next session "
        f"(/new, or the next `codecoder` here){rules}; `codecoder untrust` undoes it",
        "green",
    )


def _permissions(host: Host, arguments: str) -> None:
    from codecoder import paths
    from codecoder.config import ConfigError, read_toml
    from codecoder.permissions.rules import parse_table
    from codecoder.permissions.trust import approved, is_trusted, project_rules

    backend = host.backend
    workspace = host.workspace
    mode = backend.mode if backend is not None else "?"
    trusted = is_trusted(workspace)
    try:
        pinned = approved(workspace, project_rules(workspace))
    except ConfigError:
        pinned = True  # the broken file is shown below
    lines = [f"approval mode **{mode}** — {APPROVAL_HELP.get(mode, '')}", ""]
    levels: list[tuple[str, Path, bool]] = [
        ("project (shared)", paths.project_dir(workspace) / "config.toml", trusted),
        ("project (yours)", paths.project_dir(workspace) / "config.local.toml", trusted),
        ("user", paths.config_dir() / "config.toml", True),
    ]
    lines += _session_grants(backend)
    for name, path, applied in levels:
        try:
            rules: RuleSet = parse_table(read_toml(path).get("permissions"), str(path))
        except ConfigError as exc:
            lines.append(f"- {name}: `{exc}`")
            continue
        count = len(rules.allow) + len(rules.ask) + len(rules.deny)
        if not path.exists() or not count:
            continue
        note = "" if applied else " — **not applied**: the folder is not trusted (/trust)"
        lines.append(f"**{name}** `{path}`{note}")
        for verdict, found in (("deny", rules.deny), ("ask", rules.ask), ("allow", rules.allow)):
            lines += [f"- {verdict} `{rule.text}`" for rule in found]
        if applied and not pinned and name.startswith("project") and rules.allow:
            lines.append("- *its allow rules are not applied: not approved as they are (/trust)*")
        lines.append("")
    lines += [
        "Then the defaults of the mode: reads inside the workspace are allowed, and the "
        "commands on the built-in read-only list; a deny at any level wins "
        "(docs/permissions.md).",
    ]
    host.say_markdown("\n".join(lines))


def _session_grants(backend: Backend | None) -> list[str]:
    if backend is None or backend.remote or backend.policy is None:
        return ["*Answers given for this session are kept by the daemon.*", ""]
    found = backend.policy.session_answers()
    if not found:
        return ["**this session**: no answers saved yet", ""]
    return ["**this session** (your answers)", *[f"- {text}" for text in found], ""]
