"""The plan file (docs/plans.md): read, checked whole, and refused with one line naming
the file, the line and the problem before anything runs.

```toml
title = "Add a slug helper"   # optional
max_attempts = 3              # turns per milestone (default 3)
gate_timeout = 600            # seconds per gate command (default 600)

[[milestones]]
name = "helper"
task = "Write slug.py with slugify(s) …"
gates = ["test -f slug.py", "python3 -m pytest -q tests/test_slug.py"]
```
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_GATE_TIMEOUT = 600.0
MAX_ATTEMPTS_LIMIT = 100
GATE_TIMEOUT_LIMIT = 86_400.0
NAME_LIMIT = 200

_TOP_KEYS = ("title", "max_attempts", "gate_timeout", "milestones")
_MILESTONE_KEYS = ("name", "task", "gates")


class PlanError(Exception):
    """The plan file cannot be read or is wrong: one line, `FILE[:LINE]: problem` (exit 2)."""


class Milestone(msgspec.Struct, frozen=True):
    name: str
    """Unique within the plan; how events, the store and `--continue` name it."""
    task: str
    """The first user message of the milestone's first turn."""
    gates: tuple[str, ...] = ()
    """Shell commands run one after another in the workspace when a turn ends; all must
    exit 0 for the milestone to pass (none: it passes when its turn ends without error)."""


class Plan(msgspec.Struct, frozen=True):
    path: str
    """The file, resolved: with the workspace, what identifies a plan's runs."""
    digest: str
    """SHA-256 of the file's bytes: a changed file is noticed on `--continue`."""
    milestones: tuple[Milestone, ...]
    title: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    gate_timeout: float = DEFAULT_GATE_TIMEOUT


def load_plan(path: str | Path, *, source: str | None = None) -> Plan:
    """Read and check a plan file; PlanError says what is wrong and where, naming the
    file as `source` (default: `path` as given)."""
    file = Path(path).expanduser()
    shown = source if source is not None else str(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PlanError(f"{shown}: {exc.strerror or exc}") from None
    return parse_plan(data, shown, resolved=str(file.resolve()))


def parse_plan(data: bytes, source: str, *, resolved: str | None = None) -> Plan:
    """The plan in `data`; `source` names it in errors."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PlanError(f"{source}:{line}: not UTF-8 text") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{source}: not valid TOML: {exc}") from None
    checker = _Checker(source, text)
    return checker.plan(table, resolved or source, hashlib.sha256(data).hexdigest())


class _Checker:
    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.text = text

    def fail(self, path: tuple[str | int, ...], message: str) -> PlanError:
        from codecoder.config_schema import locate

        line = locate(self.text, path) if path else None
        where = f"{self.source}:{line}" if line is not None else self.source
        return PlanError(f"{where}: {message}")

    def plan(self, table: Mapping[str, Any], path: str, digest: str) -> Plan:
        self.unknown(table, _TOP_KEYS, (), "")
        title = table.get("title")
        if title is not None and not isinstance(title, str):
            raise self.fail(("title",), f"title must be a string (it is {_shown(title)})")
        attempts = table.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
        if not _whole(attempts) or not 1 <= attempts <= MAX_ATTEMPTS_LIMIT:
            raise self.fail(
                ("max_attempts",),
                f"max_attempts must be a whole number from 1 to {MAX_ATTEMPTS_LIMIT} "
                f"(it is {_shown(attempts)})",
            )
        timeout = table.get("gate_timeout", DEFAULT_GATE_TIMEOUT)
        if not _number(timeout) or not 0 < timeout <= GATE_TIMEOUT_LIMIT:
            raise self.fail(
                ("gate_timeout",),
                f"gate_timeout must be a number of seconds above 0 and at most "
                f"{GATE_TIMEOUT_LIMIT:g} (it is {_shown(timeout)})",
            )
        return Plan(
            path=path,
            digest=digest,
            milestones=self.milestones(table.get("milestones")),
            title=title,
            max_attempts=int(attempts),
            gate_timeout=float(timeout),
        )

    def milestones(self, value: object) -> tuple[Milestone, ...]:
        if value is None or value == []:
            raise self.fail(
                ("milestones",) if value is not None else (),
                "the plan has no milestones (add [[milestones]] tables with name, task and gates)",
            )
        if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
            raise self.fail(("milestones",), "milestones must be [[milestones]] tables")
        seen: dict[str, int] = {}
        found: list[Milestone] = []
        for index, table in enumerate(value):
            milestone = self.milestone(table, index)
            if milestone.name in seen:
                raise self.fail(
                    ("milestones", index, "name"),
                    f"milestones {seen[milestone.name] + 1} and {index + 1} are both named "
                    f"{_shown(milestone.name)}",
                )
            seen[milestone.name] = index
            found.append(milestone)
        return tuple(found)

    def milestone(self, table: Mapping[str, Any], index: int) -> Milestone:
        at: tuple[str | int, ...] = ("milestones", index)
        name = table.get("name")
        label = f"milestone {index + 1}"
        if isinstance(name, str) and name.strip():
            label += f" ({_shown(name)})"
        self.unknown(table, _MILESTONE_KEYS, at, label + ": ")
        if not isinstance(name, str) or not name.strip():
            why = (
                "has no name"
                if name is None
                else f"needs a name, a non-empty string (it is {_shown(name)})"
            )
            raise self.fail(at if name is None else (*at, "name"), f"{label} {why}")
        if name != name.strip() or not name.isprintable() or len(name) > NAME_LIMIT:
            raise self.fail(
                (*at, "name"),
                f"{label}: the name must be one line of at most {NAME_LIMIT} printable "
                "characters, without spaces around it",
            )
        task = table.get("task")
        if not isinstance(task, str) or not task.strip():
            why = (
                "has no task"
                if task is None
                else f"needs a task, a non-empty string (it is {_shown(task)})"
            )
            raise self.fail(at if task is None else (*at, "task"), f"{label} {why}")
        return Milestone(name=name, task=task, gates=self.gates(table.get("gates", []), at, label))

    def gates(self, value: object, at: tuple[str | int, ...], label: str) -> tuple[str, ...]:
        where = (*at, "gates")
        if not isinstance(value, list):
            raise self.fail(
                where, f"{label}: gates must be a list of commands (it is {_shown(value)})"
            )
        for number, gate in enumerate(value, 1):
            if not isinstance(gate, str):
                raise self.fail(
                    where, f"{label}: gate {number} must be a command string (it is {_shown(gate)})"
                )
            if not gate.strip():
                raise self.fail(where, f"{label}: gate {number} is an empty command")
            if "\0" in gate:
                raise self.fail(where, f"{label}: gate {number} contains a NUL character")
        return tuple(value)

    def unknown(
        self,
        table: Mapping[str, Any],
        known: tuple[str, ...],
        at: tuple[str | int, ...],
        label: str,
    ) -> None:
        for key in table:
            if key in known:
                continue
            import difflib

            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else f" (known: {', '.join(known)})"
            raise self.fail((*at, key), f"{label}unknown key `{key}`{hint}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:39] + "…"
        text = text.replace("\\", "\\\\").replace('"', '\\"')
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        return f'"{text}"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__
