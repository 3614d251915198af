"""The permission policy: the four-level lookup chain of DESIGN.md §5.

For each part of a call (calls.py):

1. a deny rule at any level wins (project, if trusted, and user);
2. a part that cannot be checked (Hazard) asks, unless the user granted this exact call
   for the session;
3. session grants (answers "always, this session");
4. a write to `.git/`, `.codecoder/` or CodeCoder's config asks, whatever the mode;
5. project rules (`.codecoder/config.toml` + `config.local.toml`, trusted folders only;
   their allow rules only as the set the user approved: trust.py), then user rules
   (`$XDG_CONFIG_HOME/codecoder/config.toml`): the first level with a matching ask or
   allow rule decides (ask before allow within a level);
6. built-in defaults by risk, shaped by the approval mode; a command on the built-in
   read-only list (programs.py) is allowed in every mode.

The call's verdict is the strictest of its parts' (deny > ask > allow); read-only mode
denies every non-read tool first (and every command that is not a plain read), and
never-ask turns a final ask into a deny the model can read.

**Escalation**: `run_command` with `sandbox: false` asks to run outside the sandbox
(docs/sandbox.md). Its commands skip steps 5 and 6 as written: no mode, no read-only list
and no `run_command(…)` allow rule lets one through. A deny or ask rule still holds; an
`unsandboxed(…)` rule of the same pattern syntax allows (or, as a deny or ask rule,
denies or asks about) running that command unconfined; otherwise it asks, so a
headless (never-ask) run denies it. The answers "always, this session / project" grant
the escalation itself (an exact command line; an exact `unsandboxed(…)` rule), and
"deny, this session" refuses only the escalation.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

import msgspec

from codecoder import paths
from codecoder.config import read_toml
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Decision, DecisionLevel, Tool
from codecoder.permissions.calls import (
    CommandPart,
    FilePart,
    Hazard,
    Part,
    Scope,
    ToolPart,
    UrlPart,
    analyse,
)
from codecoder.permissions.explain import Refusal
from codecoder.permissions.fullauto import full_auto_concern
from codecoder.permissions.matching import carriers, covers_carried, rule_matches, values
from codecoder.permissions.modes import NEEDS_A_PERSON, ApprovalMode
from codecoder.permissions.paths import is_inside
from codecoder.permissions.rules import (
    COMMAND_TOOL,
    EDIT_FAMILY,
    UNSANDBOXED,
    PathPattern,
    Rule,
    RuleSet,
    command_rule,
    parse_table,
    path_rule,
)
from codecoder.permissions.trust import (
    applied_rules,
    approve_rules,
    approved,
    is_trusted,
    project_rules,
)

_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
_REFUSALS_KEPT = 32
_WIDER_MODES: dict[ApprovalMode, tuple[ApprovalMode, ...]] = {
    "never-ask": ("auto-edit", "full-auto"),
    "ask": ("auto-edit", "full-auto"),
    "auto-edit": ("full-auto",),
}
"""The modes that allow more without asking than each mode, narrowest first: what a
refusal may suggest instead of a rule."""
_WILDCARD = re.compile(r"[*?\[]")
_NOBODY_TO_ASK = (
    "nobody can answer in this run (never-ask): decide on your own and say in your "
    "answer what you assumed"
)
_ONLY_READS = (
    "this session may only read (read-only mode): don't retry it or change files another "
    "way; describe the change in your answer instead"
)


class _Grants:
    """Session grants (or, for "deny, this session", refusals): exact command lines,
    exact (tool, real path), (tool, host), tools."""

    def __init__(self) -> None:
        self.commands: set[str] = set()
        self.escalations: set[str] = set()
        """Command lines granted (or refused) to run outside the sandbox."""
        self.files: set[tuple[str, str]] = set()
        self.hosts: set[tuple[str, str]] = set()
        self.tools: set[str] = set()

    def describe(self) -> list[str]:
        """What is recorded, as a person reads it."""
        lines = [f"run `{command}`" for command in sorted(self.commands)]
        lines += [f"run `{command}` outside the sandbox" for command in sorted(self.escalations)]
        lines += [f"{tool} on {path}" for tool, path in sorted(self.files)]
        lines += [f"{tool} from {host}" for tool, host in sorted(self.hosts)]
        return lines + sorted(self.tools)

    def covers_call(self, tool: Tool, call: ToolCall, *, escalated: bool = False) -> bool:
        command = call.args.get("command")
        lines = self.escalations if escalated else self.commands
        return tool.name == COMMAND_TOOL and isinstance(command, str) and command in lines

    def covers(self, part: Part) -> bool:
        if isinstance(part, FilePart):
            return (part.tool, str(part.target.real)) in self.files
        if isinstance(part, UrlPart):
            return (part.tool, part.host) in self.hosts
        if isinstance(part, ToolPart):
            return part.tool in self.tools
        return False


class _Stopped(NamedTuple):
    """A call the policy refused or asked about, as it was read (RulePolicy.refusal)."""

    call: ToolCall
    decision: Decision
    parts: list[Part]
    mode: ApprovalMode
    escalated: bool


class RulePolicy:
    """The PermissionPolicy of a session (kernel.ports). Thread-safe: sub-agents share it."""

    def __init__(
        self,
        workspace: Path,
        mode: ApprovalMode = "ask",
        *,
        user: RuleSet | None = None,
        project: RuleSet | None = None,
        trusted: bool = False,
        held_back: str | None = None,
        extra_roots: Sequence[Path] = (),
    ) -> None:
        self.workspace = workspace.resolve()
        roots = (self.workspace, *(r.resolve() for r in extra_roots))
        config = Path(os.path.realpath(paths.config_dir()))
        self.scope = Scope(self.workspace, roots, config if is_inside(config, roots) else None)
        self.trusted = trusted
        self._mode: ApprovalMode = mode
        self._user = user if user is not None else RuleSet()
        self._project = project if project is not None else RuleSet()
        self._grants = _Grants()
        self._refusals = _Grants()
        self._asked: tuple[ToolCall, list[Part]] | None = None
        self._refused: dict[str, _Stopped] = {}
        self._lock = threading.Lock()
        self.edit_tracked_gitignore = False
        """May the first project rule add its file to a .gitignore that git tracks? Set by
        a client that asked the user; otherwise `.codecoder/.gitignore` gets the line."""
        self.held_back = held_back
        """Why the project's allow rules do not apply (not approved as they are now), for
        the session to say once; None when they apply."""

    @classmethod
    def load(
        cls, workspace: Path, mode: ApprovalMode = "ask", *, extra_roots: Sequence[Path] = ()
    ) -> RulePolicy:
        """The policy from the user's config and, if the folder is trusted, the project's
        (its allow rules only as approved: trust.py)."""
        trusted = is_trusted(workspace)
        user_file = paths.config_dir() / "config.toml"
        user = parse_table(read_toml(user_file).get("permissions"), str(user_file))
        project, held_back = RuleSet(), None
        if trusted:
            project, held_back = applied_rules(workspace, project_rules(workspace))
        return cls(
            workspace,
            mode,
            user=user,
            project=project,
            trusted=trusted,
            held_back=held_back,
            extra_roots=extra_roots,
        )

    @property
    def mode(self) -> ApprovalMode:
        return self._mode

    @mode.setter
    def mode(self, mode: ApprovalMode) -> None:
        """Switched by a client (ACP session modes) between turns or mid-turn."""
        self._mode = mode

    # --- offer ---------------------------------------------------------------------

    def offers(self, tool: Tool, *, attended: bool) -> bool:
        """Whether some call of `tool` could run in the current mode, so that it is worth
        offering to the model: a tool whose every call is refused only costs its schema
        and a wasted round. A deny rule naming the whole tool takes it away in every
        mode; read-only mode offers what reads (and run_command, for commands that
        read). Where a call that needs approval cannot get it (`attended` False: nobody
        to answer; never-ask: nobody is asked), a tool is offered when the mode or an
        allow rule lets some call of it run without asking."""
        mode = self._mode
        levels = [level for _, level in self._levels()]
        if any(r.pattern is None and r.names(tool.name) for lv in levels for r in lv.deny):
            return False
        if mode == "read-only":
            if tool.name in NEEDS_A_PERSON:
                return attended
            return tool.risk == "read" or tool.name == COMMAND_TOOL
        if attended and mode != "never-ask":
            return True
        if tool.name in NEEDS_A_PERSON:
            return False
        if tool.risk == "read" or tool.name == COMMAND_TOOL:  # the read-only list runs
            return True
        if tool.risk == "write" and mode in ("auto-edit", "full-auto"):
            return True
        families = _edit_family(tool)
        return any(rule.names(tool.name, families) for level in levels for rule in level.allow)

    # --- decide --------------------------------------------------------------------

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        mode = self._mode
        decision, parts = self._decide(tool, call, mode)
        if decision.verdict != "allow":
            self._note_refusal(_Stopped(call, decision, parts, mode, is_escalation(tool, call)))
        if decision.verdict == "ask" and mode == "never-ask":
            reason = _never_ask_reason(decision.reason)
            return msgspec.structs.replace(decision, verdict="deny", reason=reason)
        return decision

    def _decide(
        self, tool: Tool, call: ToolCall, mode: ApprovalMode
    ) -> tuple[Decision, list[Part]]:
        """The verdict before never-ask turns an ask into a deny, and the parts read."""
        if mode == "read-only" and tool.risk != "read" and tool.name != COMMAND_TOOL:
            return Decision("deny", f"{tool.name}: {_ONLY_READS}", level="mode"), []
        if mode == "never-ask" and tool.name in NEEDS_A_PERSON:
            return Decision("deny", _NOBODY_TO_ASK, level="mode"), []
        parts = analyse(tool, call, self.scope)
        with self._lock:
            self._asked = (call, parts)  # an answer to its question reuses the analysis
        described = tuple(map(_describe, parts))
        if mode == "read-only" and tool.name == COMMAND_TOOL:
            writer = next((p for p in parts if not _only_reads(p)), None)
            if writer is not None:
                reason = f"{_describe(writer)} may change something, and {_ONLY_READS}"
                return Decision("deny", reason, level="mode", parts=described), parts
        escalated = is_escalation(tool, call)
        with self._lock:
            refused = self._refusals.covers_call(tool, call) or any(
                map(self._refusals.covers, parts)
            )
            if refused or (escalated and self._refusals.covers_call(tool, call, escalated=True)):
                reason = "you denied this for the rest of the session"
                return Decision("deny", reason, level="refusal", parts=described), parts
            granted = self._grants.covers_call(tool, call, escalated=escalated)
            decisions = [self._judge(part, granted, mode, escalated) for part in parts]
        return msgspec.structs.replace(_strictest(decisions), parts=described), parts

    # --- explain -------------------------------------------------------------------

    def _note_refusal(self, stopped: _Stopped) -> None:
        """Keep what a refused or asked call was read as, so that a face with nobody to
        answer can tell the person why it did not run (`refusal`). Only the last few are
        kept: a face asks right after the call finishes."""
        with self._lock:
            self._refused[stopped.call.id] = stopped
            while len(self._refused) > _REFUSALS_KEPT:
                del self._refused[next(iter(self._refused))]

    def refusal(self, call_id: str, name: str) -> Refusal | None:
        """Why the call `call_id` of tool `name` was refused or asked about, with what
        would let it run; None when the policy did not stop it (a hook did)."""
        with self._lock:
            kept = self._refused.pop(call_id, None)
        if kept is None or kept.call.name != name:
            return None
        call, decision, parts, mode, escalated = kept
        stopping = [p for p in parts if self._stops(p, mode, escalated)]
        rules = _allow_rules(stopping, escalated=escalated)
        modes: tuple[ApprovalMode, ...] = ()
        if decision.verdict == "ask" and decision.level == "default" and not escalated:
            modes = tuple(
                other
                for other in _WIDER_MODES.get(mode, ())
                if parts and not any(self._stops(p, other, escalated) for p in parts)
            )
        reason = decision.reason.replace(_ONLY_READS, "read-only mode lets nothing change")
        if decision.reason == _NOBODY_TO_ASK:
            reason = f"{call.name} asks a person, and never-ask offers no one to ask"
        return Refusal(
            decision,
            reason,
            mode,
            command=call.args.get("command") if call.name == COMMAND_TOOL else None,
            rules=rules,
            modes=modes,
            trusted=self.trusted,
            held_back=self.held_back is not None,
            user_file=str(paths.config_dir() / "config.toml"),
            project_dir=str(paths.project_dir(self.workspace)),
        )

    def _stops(self, part: Part, mode: ApprovalMode, escalated: bool) -> bool:
        with self._lock:
            return self._judge(part, False, mode, escalated).verdict != "allow"

    def _judge(
        self, part: Part, granted: bool, mode: ApprovalMode, escalated: bool = False
    ) -> Decision:
        escalating = escalated and isinstance(part, CommandPart)
        for name, level in self._levels():
            deny = level.deny + _escalation_rules(level.deny) if escalating else level.deny
            rule = _first(deny, part, loose=True)
            if rule is not None:
                text = rule.describe()
                return Decision("deny", f"denied by rule {text}", rule=text, level=name)
        if granted:
            return Decision("allow", "allowed for this session", level="session")
        below = self._denied_below(part)
        if below is not None:
            reason = f"{_describe(part)}: it reads what rule {below} denies"
            return Decision("ask", reason, rule=below, level="default")
        if isinstance(part, Hazard):
            return Decision("ask", f"{part.tool}: cannot check it: {part.reason}", level="default")
        if isinstance(part, CommandPart) and part.command.guessed:
            return Decision("ask", f"{_describe(part)}: cannot check it", level="default")
        if escalating and isinstance(part, CommandPart):
            return self._escalation(part)
        if self._grants.covers(part):
            return Decision("allow", "allowed for this session", level="session")
        if isinstance(part, FilePart) and part.protected is not None:
            return Decision("ask", f"{_describe(part)}: {part.protected}", level="default")
        for name, level in self._levels():
            decided = _level_decision(level, part)
            if decided is not None:
                return msgspec.structs.replace(decided, level=name)
        return msgspec.structs.replace(self._default(part, mode), level="default")

    def _denied_below(self, part: Part) -> str | None:
        """A read of a whole folder (`grep -r x .`, the grep tool on `src`) reads the
        files in it: when a `read(…)` deny rule may name one of them, the read asks."""
        if not isinstance(part, FilePart) or part.writes or not part.target.real.is_dir():
            return None
        for _, level in self._levels():
            for rule in level.deny:
                if rule.names(part.tool, (part.family,)) and _may_name_below(rule, part):
                    return rule.describe()
        return None

    def _escalation(self, part: CommandPart) -> Decision:
        """A command to run outside the sandbox: an ask rule (run_command or unsandboxed)
        asks, an `unsandboxed(…)` allow rule allows, and otherwise it asks."""
        what = _describe(part)
        for name, level in self._levels():
            rule = _first(level.ask + _escalation_rules(level.ask), part, loose=True)
            if rule is not None:
                text = rule.describe()
                return Decision("ask", f"{what}: rule {text} asks", rule=text, level=name)
            decided = _level_decision(RuleSet(allow=_escalation_rules(level.allow)), part)
            if decided is not None:
                return msgspec.structs.replace(decided, level=name)
        reason = f"{what} outside the sandbox (sandbox: false): only the user can allow that"
        return Decision("ask", reason, level="default")

    def _levels(self) -> tuple[tuple[DecisionLevel, RuleSet], ...]:
        user: tuple[DecisionLevel, RuleSet] = ("user", self._user)
        return (("project", self._project), user) if self.trusted else (user,)

    def _default(self, part: Part, mode: ApprovalMode) -> Decision:
        what = _describe(part)
        if isinstance(part, FilePart):
            if not part.target.inside:
                return Decision("ask", f"{what}: outside the workspace")
            if not part.writes or mode in ("auto-edit", "full-auto"):
                return Decision("allow", f"{what}: inside the workspace")
            return Decision("ask", f"{what}: no rule allows it")
        if isinstance(part, CommandPart):
            return self._default_command(part, mode, what)
        if isinstance(part, ToolPart) and part.risk == "read":
            return Decision("allow", f"{part.tool} only reads")
        return Decision("ask", f"{what}: no rule allows it")

    def _default_command(self, part: CommandPart, mode: ApprovalMode, what: str) -> Decision:
        if part.read_only:
            return Decision("allow", f"{what}: only reads")
        if mode != "full-auto":
            return Decision("ask", f"{what}: no rule allows it")
        concern = full_auto_concern(part, self.scope)
        if concern is not None:
            return Decision("ask", f"{what}: {concern}")
        return Decision("allow", f"{what}: full-auto")

    # --- remember ------------------------------------------------------------------

    def remember(self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]) -> None:
        """Record an "always" answer. `project` also appends rules to
        `.codecoder/config.local.toml` (they apply in later sessions once the folder is
        trusted); the session grant makes the answer hold now either way. Raises
        ConfigError when that file cannot be updated."""
        parts = self._parts(tool, call)
        escalated = is_escalation(tool, call)
        with self._lock:
            pending = [
                p for p in parts if self._judge(p, False, self._mode, escalated).verdict != "allow"
            ]
            _record(self._grants, tool, call, parts, escalated=escalated)
        if scope == "project":
            self._write_project_rules(pending, escalated=escalated)

    def forbid(self, tool: Tool, call: ToolCall) -> None:
        """Record a "deny, this session" answer: the same call (the exact command line,
        the same file with the same tool, the same host) is denied without asking."""
        parts = self._parts(tool, call)
        with self._lock:
            _record(self._refusals, tool, call, parts, escalated=is_escalation(tool, call))

    def session_answers(self) -> list[str]:
        """The answers given for this session ("always" and "deny, this session"), one
        line each, as a client shows them (`/permissions`)."""
        with self._lock:
            return [
                *(f"allow {line}" for line in self._grants.describe()),
                *(f"deny {line}" for line in self._refusals.describe()),
            ]

    def adopt_answers(self, other: RulePolicy) -> None:
        """Take over `other`'s session answers (the same session, rebuilt on another
        model by a client)."""
        with other._lock:
            grants, refusals = other._grants, other._refusals
        with self._lock:
            self._grants, self._refusals = grants, refusals
        self.edit_tracked_gitignore = other.edit_tracked_gitignore

    def _parts(self, tool: Tool, call: ToolCall) -> list[Part]:
        """The parts of a call just decided (the answer follows its question), else a
        fresh analysis."""
        with self._lock:
            asked, self._asked = self._asked, None
        if asked is not None and asked[0] is call:
            return asked[1]
        return analyse(tool, call, self.scope)

    def _write_project_rules(self, parts: list[Part], *, escalated: bool = False) -> None:
        """One exact rule per part not yet allowed; a carried command is covered by the
        exact rule of a carrier that is written too. For an escalation, the commands'
        rules are `unsandboxed(…)`."""
        texts = [text for text in _rule_texts(parts, escalated=escalated) if text is not None]
        if not texts:
            return
        from codecoder.permissions import tomlfile  # only an "always" answer writes

        target = paths.project_dir(self.workspace) / "config.local.toml"
        first = not target.exists()
        pinned = approved(self.workspace, project_rules(self.workspace))
        for text in dict.fromkeys(texts):
            tomlfile.add_rule(target, "allow", text)
        written = project_rules(self.workspace)
        if pinned:  # the user's own answer; a set someone else changed stays unapproved
            approve_rules(self.workspace, written)
        if self.trusted:
            project, _ = applied_rules(self.workspace, written)
            with self._lock:
                self._project = project
        if first:
            tomlfile.ignore_local_file(self.workspace, edit_tracked=self.edit_tracked_gitignore)


def is_escalation(tool: Tool, call: ToolCall) -> bool:
    """Whether the call asks to run a command outside the sandbox (`sandbox: false`):
    any `sandbox` but `true` counts, whatever a tool's check would make of it."""
    return tool.name == COMMAND_TOOL and call.args.get("sandbox", True) is not True


def _rule_texts(parts: list[Part], *, escalated: bool) -> list[str | None]:
    """The exact allow rule of each part (None where no rule can express it); a carried
    command is left to the exact rule of a carrier among `parts`. For an escalation, the
    commands' rules are `unsandboxed(…)`."""
    pending = {p.command for p in parts if isinstance(p, CommandPart)}
    parts = [
        p
        for p in parts
        if not (isinstance(p, CommandPart) and pending.intersection(carriers(p.command)))
    ]
    texts = list(map(_rule_text, parts))
    if escalated:
        prefix = f"{COMMAND_TOOL}("
        texts = [
            UNSANDBOXED + t[len(COMMAND_TOOL) :] if t is not None and t.startswith(prefix) else t
            for t in texts
        ]
    return texts


def _allow_rules(parts: list[Part], *, escalated: bool) -> tuple[str, ...]:
    """The allow rules that together let `parts` run; none when one of them cannot be
    allowed by a rule (a protected write, a command the check cannot follow)."""
    texts = _rule_texts(parts, escalated=escalated)
    if not texts or any(text is None for text in texts):
        return ()
    return tuple(dict.fromkeys(text for text in texts if text is not None))


def _escalation_rules(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """The `unsandboxed(…)` rules among `rules`, as run_command rules of the same pattern."""
    return tuple(
        msgspec.structs.replace(rule, tool=COMMAND_TOOL)
        for rule in rules
        if rule.tool == UNSANDBOXED
    )


def _record(
    grants: _Grants, tool: Tool, call: ToolCall, parts: list[Part], *, escalated: bool = False
) -> None:
    command = call.args.get("command")
    if tool.name == COMMAND_TOOL and isinstance(command, str):
        (grants.escalations if escalated else grants.commands).add(command)
    for part in parts:
        if isinstance(part, FilePart) and tool.name != COMMAND_TOOL:
            grants.files.add((part.tool, str(part.target.real)))
        elif isinstance(part, UrlPart):
            grants.hosts.add((part.tool, part.host))
        elif isinstance(part, ToolPart):
            grants.tools.add(part.tool)


def _first(rules: tuple[Rule, ...], part: Part, *, loose: bool) -> Rule | None:
    return next((rule for rule in rules if rule_matches(rule, part, loose=loose)), None)


def _level_decision(level: RuleSet, part: Part) -> Decision | None:
    rule = _first(level.ask, part, loose=True)
    if rule is not None:
        text = rule.describe()
        return Decision("ask", f"{_describe(part)}: rule {text} asks", rule=text)
    rule = _first(level.allow, part, loose=False)
    if rule is None and isinstance(part, CommandPart):
        outer = carriers(part.command)
        rule = next((r for r in level.allow if any(covers_carried(r, c) for c in outer)), None)
    if rule is not None:
        text = rule.describe()
        return Decision("allow", f"allowed by rule {text}", rule=text)
    return None


def _edit_family(tool: Tool) -> tuple[str, ...]:
    """`edit(…)` rules name every file tool that writes (the tools that write are)."""
    return (EDIT_FAMILY,) if tool.risk == "write" else ()


def _only_reads(part: Part) -> bool:
    if isinstance(part, CommandPart):
        return part.read_only
    return isinstance(part, FilePart) and not part.writes


def _may_name_below(rule: Rule, part: FilePart) -> bool:
    """Whether a path rule could match something below the folder `part` reads."""
    pattern = rule.pattern
    if not isinstance(pattern, PathPattern):
        return pattern is None
    if pattern.anchor == "absolute":
        folder = str(part.target.real).rstrip("/") + "/"
    elif part.target.relative is None:
        return False
    else:
        relative = part.target.relative
        folder = "" if relative in ("", ".") else relative + "/"
    found = _WILDCARD.search(pattern.glob)
    literal = pattern.glob if found is None else pattern.glob[: found.start()]
    return literal.startswith(folder) or folder.startswith(literal)


def _strictest(decisions: list[Decision]) -> Decision:
    if not decisions:
        return Decision("allow", "nothing to check")
    return max(decisions, key=lambda d: _STRICTNESS[d.verdict])


def _describe(part: Part) -> str:
    if isinstance(part, CommandPart):
        return f"run `{_excerpt(part.command.source)}`"
    if isinstance(part, FilePart):
        verb = "write" if part.writes else "read"
        return f"{part.tool}: {verb} {part.target.real}"
    if isinstance(part, UrlPart):
        return f"{part.tool}: fetch from {part.host}"
    return part.tool


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _rule_text(part: Part) -> str | None:
    """The allow rule that would cover `part` (None when no rule can express it)."""
    if isinstance(part, CommandPart) and part.command.guessed:
        return None
    if isinstance(part, CommandPart):
        words = values(part.command.words)
        if not words or any(word is None for word in words):
            return None
        return command_rule([word for word in words if word is not None])
    if isinstance(part, FilePart):
        if part.protected is not None:
            return None
        relative = part.target.relative
        where = str(part.target.real) if relative is None else relative or "."
        return path_rule(part.tool, where)
    if isinstance(part, UrlPart):
        return f"{part.tool}(domain:{part.host})"
    if isinstance(part, ToolPart):
        return part.tool
    return None


def _never_ask_reason(reason: str) -> str:
    """What a refusal in never-ask mode means for the model: the same call would be
    refused again, and nobody will change that during the run."""
    return (
        f"needs approval ({reason}), and nobody can approve calls in this run (never-ask). "
        "Don't retry it or get around it another way; finish what you can without it and "
        "say in your answer what it would have needed."
    )
