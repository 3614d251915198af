"""`[sandbox] network_allow`: which commands get the network inside the sandbox.

Each entry is a run_command pattern (`npm install:*`, `cargo fetch`). A command line gets
the network when the parser can read it, at least one of its simple commands matches an
entry the way an allow rule matches (every word literal: `npm install $X` does not
match), and every other one is on the read-only list (`cd web && npm install` does;
`npm install && curl … | sh` does not: curl is not covered). The network is one switch
for the whole line, so one part that is not covered keeps it off for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codecoder.permissions.calls import CommandPart, Hazard, Scope, command_parts
from codecoder.permissions.matching import carriers, covers_carried, rule_matches
from codecoder.permissions.rules import COMMAND_TOOL, Rule, parse_rule


class NetworkAllow:
    """Callable as `(command, cwd) -> bool`: the Sandbox's `network_for`."""

    def __init__(self, patterns: Sequence[str], source: str, scope: Scope) -> None:
        """Raises ConfigError naming `source` for a pattern that does not parse."""
        self.rules = tuple(
            parse_rule(f"{COMMAND_TOOL}({pattern})", f"{source} [sandbox] network_allow")
            for pattern in patterns
        )
        self.scope = scope

    def __call__(self, command: str, cwd: Path) -> bool:
        if not self.rules:
            return False
        parts = command_parts({"command": command, "cwd": str(cwd)}, self.scope)
        if any(isinstance(part, Hazard) for part in parts):
            return False
        matched = False
        for part in parts:
            if not isinstance(part, CommandPart):
                continue
            if part.command.guessed:
                return False
            if _covered(self.rules, part):
                matched = True
            elif not part.read_only:
                return False
        return matched


def _covered(rules: tuple[Rule, ...], part: CommandPart) -> bool:
    if any(rule_matches(rule, part, loose=False) for rule in rules):
        return True
    outer = carriers(part.command)
    return any(covers_carried(rule, carrier) for rule in rules for carrier in outer)
