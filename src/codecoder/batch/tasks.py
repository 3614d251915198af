"""The tasks file of `codecoder batch` (docs/batch.md): one JSON object per line, checked
whole before anything runs.

    {"id": "fix-1", "repo": "../svc", "ref": "v1.2", "task": "fix the failing test",
     "model": "anthropic/claude-sonnet-4-5", "approval": "full-auto", "timeout": 600}

A batch of hundreds of tasks that stops at task 170 because of a typo on line 170 wastes
the first 169 runs, so every line is read and checked first: unknown keys (with the key
meant), duplicate ids, values of the wrong type, both or neither of `task` and `plan`, and
script and plan files that cannot be read or are not valid are all reported together, one
line each, and nothing runs. What can only be found by trying (a repository that cannot
be cloned, a ref it does not have) is that task's `error` result instead.

Paths (`repo` when it is not a URL, `script`, `plan`) are relative to the tasks file's
folder. Script and plan files are read here and travel with the task as their contents
(`TaskSpec`), so a task runs the same on a Ray node that has no copy of them.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeGuard

import msgspec

from codecoder.approval import MODES as APPROVAL_MODES
from codecoder.sandbox import MODES as SANDBOX_MODES

KEYS = ("id", "repo", "ref", "task", "plan", "model", "approval", "sandbox", "timeout", "script")
TIMEOUT_LIMIT = 7 * 86_400.0
MAX_PROBLEMS = 20
"""Problems listed before the rest are summed up in one line."""


class TasksError(Exception):
    """The tasks file cannot be used: one problem per line, each `FILE:LINE: problem`."""


class Task(msgspec.Struct, frozen=True):
    """One line of the tasks file, checked; `repo` is absolute when it is a local path."""

    id: str
    repo: str
    task: str | None = None
    plan: str | None = None
    ref: str | None = None
    model: str | None = None
    approval: str | None = None
    sandbox: str | None = None
    timeout: float | None = None
    script: str | None = None


class TaskFile(msgspec.Struct, frozen=True):
    """A script or plan file, carried by content: `name` is its base name (exec's own
    messages about it name the file), `data` its bytes."""

    name: str
    data: bytes


class TaskSpec(msgspec.Struct, frozen=True):
    """What a runner needs to run a task anywhere: the task and its files' contents."""

    task: Task
    script: TaskFile | None = None
    plan: TaskFile | None = None


def load_tasks(path: Path) -> list[TaskSpec]:
    """Read and check the tasks file at `path`; TasksError lists every problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TasksError(f"{path}: {exc.strerror or exc}") from None
    return parse_tasks(data, path)


def parse_tasks(data: bytes, path: Path) -> list[TaskSpec]:
    checker = _Checker(path)
    specs: list[TaskSpec] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        spec = checker.line(number, raw)
        if spec is None:
            continue
        earlier = first_line.setdefault(spec.task.id, number)
        if earlier != number:
            checker.problem(number, f"id {spec.task.id!r} is also the id on line {earlier}")
            continue
        specs.append(spec)
    if not specs and not checker.problems:
        checker.problems.append(f"{path}: no tasks")
    checker.raise_if_any()
    return specs


def is_url(repo: str) -> bool:
    """git's own rule: `scheme://…`, or scp-like `host:path` (a colon before any slash)."""
    if "://" in repo:
        return True
    colon = repo.find(":")
    return colon > 0 and "/" not in repo[:colon]


class _Checker:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.folder = path.resolve().parent
        self.problems: list[str] = []

    def problem(self, number: int, text: str) -> None:
        self.problems.append(f"{self.path}:{number}: {text}")

    def raise_if_any(self) -> None:
        if not self.problems:
            return
        shown = self.problems[:MAX_PROBLEMS]
        if len(self.problems) > MAX_PROBLEMS:
            shown.append(f"… and {len(self.problems) - MAX_PROBLEMS} more problems")
        raise TasksError("\n".join(shown))

    def line(self, number: int, raw: bytes) -> TaskSpec | None:
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            self.problem(number, f"not JSON: {exc}")
            return None
        if not isinstance(value, dict):
            self.problem(number, "a task is a JSON object")
            return None
        before = len(self.problems)
        fields = self._fields(number, value)
        if len(self.problems) != before:
            return None
        return self._spec(number, fields)

    def _fields(self, number: int, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if key not in KEYS:
                close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
                hint = f"; did you mean `{close[0]}`?" if close else f" (known: {', '.join(KEYS)})"
                self.problem(number, f"unknown key `{key}`{hint}")
        for key in ("id", "repo"):
            if key not in value:
                self.problem(number, f"`{key}` is missing")
        for key in ("id", "repo", "ref", "task", "plan", "model", "script"):
            if key in value and not _text(value[key]):
                self.problem(number, f"`{key}` must be a non-empty string")
        if ("task" in value) == ("plan" in value):
            self.problem(number, "give exactly one of `task` and `plan`")
        self._choice(number, value, "approval", APPROVAL_MODES)
        self._choice(number, value, "sandbox", SANDBOX_MODES)
        timeout = value.get("timeout")
        if "timeout" in value and not _seconds(timeout):
            self.problem(number, f"`timeout` must be seconds, more than 0 and at most "
                         f"{TIMEOUT_LIMIT:g} (it is {timeout!r})")  # fmt: skip
        for key in ("repo", "ref"):
            text = value.get(key)
            if _text(text) and text.startswith("-"):
                self.problem(number, f"`{key}` must not start with '-' (it would be an option)")
        repo = value.get("repo")
        if _text(repo) and "::" in repo:
            self.problem(number, "`repo`: git's `transport::address` form is not accepted")
        return value

    def _choice(self, number: int, value: dict[str, Any], key: str, choices: Iterable[str]) -> None:
        if key in value and value[key] not in choices:
            self.problem(number, f"`{key}` must be one of {', '.join(choices)} "
                         f"(it is {value[key]!r})")  # fmt: skip

    def _spec(self, number: int, value: dict[str, Any]) -> TaskSpec | None:
        repo: str = value["repo"]
        if not is_url(repo):
            repo = os.path.normpath(self.folder / Path(repo).expanduser())
        if "timeout" in value:
            value["timeout"] = float(value["timeout"])
        task = msgspec.convert({**value, "repo": repo}, Task)
        script = self._file(number, task.script, "script")
        plan = self._file(number, task.plan, "plan")
        if (task.script is not None and script is None) or (task.plan is not None and plan is None):
            return None
        return TaskSpec(task, script, plan)

    def _file(self, number: int, name: str | None, kind: str) -> TaskFile | None:
        """The file's contents, checked as exec would check them."""
        if name is None:
            return None
        file = self.folder / Path(name).expanduser()
        try:
            data = file.read_bytes()
        except OSError as exc:
            self.problem(number, f"`{kind}`: cannot read {file}: {exc.strerror or exc}")
            return None
        problem = _script_problem(data) if kind == "script" else _plan_problem(data, name)
        if problem is not None:
            self.problem(number, f"`{kind}`: {name}: {problem}" if kind == "script" else problem)
            return None
        return TaskFile(file.name, data)


def _script_problem(data: bytes) -> str | None:
    from codecoder.providers.scripted import ScriptError, parse_script

    try:
        parse_script(data)
    except ScriptError as exc:
        return str(exc)
    return None


def _plan_problem(data: bytes, name: str) -> str | None:
    from codecoder.plan.spec import PlanError, parse_plan

    try:
        parse_plan(data, name)
    except PlanError as exc:
        return f"`plan`: {exc}"
    return None


def _text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def _seconds(value: object) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and 0 < value <= TIMEOUT_LIMIT  # type: ignore[operator]
