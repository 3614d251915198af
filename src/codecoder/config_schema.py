"""Every setting CodeCoder reads, declared in one place (DESIGN.md §7, docs/config.md).

`$XDG_CONFIG_HOME/codecoder/config.toml`, `.codecoder/config.toml` and
`.codecoder/config.local.toml` all follow `Config`; `trusted.toml` follows `TrustedFile`.
A file is checked as it is read (`config.read_toml`): an unknown table or key, a missing
required key or a value of the wrong type is a ConfigError naming the file, the line and,
for a misspelt name, the nearest valid one. A typo never silently allows, or fails to
deny, anything; nor does a setting under the wrong table go unnoticed.

To add a table (`[sandbox]`, `[mcp]`, `[[hooks.*]]` …): declare a Struct below with
`forbid_unknown_fields=True`, give every key a type and a default (or none: required),
add it as a field of `Config`, and read it through `section(config, "name", Struct)` or
an accessor like `shell_settings`. Feature code may still read the validated dict.

Importing this module creates a dozen msgspec classes (well under a millisecond) and is
only done when a config file exists; difflib is imported only to word an error.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import msgspec

from codecoder.sandbox import SandboxMode

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
Price = Annotated[float, msgspec.Meta(ge=0)]
Wire = Literal["chat", "responses", "anthropic"]
_Table = msgspec.Struct  # a TOML table is a Struct with forbid_unknown_fields=True


class ProviderTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[providers.NAME]`: a built-in provider's overrides, or a server of your own."""

    wire: Wire | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = {}
    models: list[str] = []
    max_tokens: PositiveInt | None = None
    reasoning_effort: str | None = None
    thinking_budget: PositiveInt | None = None
    extra_body: dict[str, Any] = {}


class PriceTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[prices."provider/model"]`: US dollars per million tokens."""

    input: Price
    output: Price
    cached: Price | None = None


class ModelTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[models."provider/model"]`."""

    context_window: PositiveInt


class CompactionTable(_Table, frozen=True, forbid_unknown_fields=True):
    threshold: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.8


class SubagentsTable(_Table, frozen=True, forbid_unknown_fields=True):
    """Read from the user's file only: a project cannot widen what sub-agents may do."""

    max_parallel: PositiveInt = 4
    max_depth: PositiveInt = 2
    run_command: bool = False
    max_rounds: PositiveInt = 50


class PermissionsTable(_Table, frozen=True, forbid_unknown_fields=True):
    """Rules (docs/permissions.md); their syntax is checked by permissions.rules."""

    allow: list[str] = []
    ask: list[str] = []
    deny: list[str] = []


class ShellTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[shell]`: which environment variables `run_command` passes to its commands."""

    env_keep: list[str] = []
    """Names (or `*` globs) passed on although they look like secrets."""
    env_drop: list[str] = []
    """Names (or `*` globs) never passed on."""


class HttpTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[http]`, read from the user's file only (the registry and `doctor` are given it)."""

    ca: Literal["system", "certifi"] | None = None
    """Where server certificates are checked against: "system", the OS store; "certifi",
    certifi's bundle; absent, SSL_CERT_FILE / SSL_CERT_DIR when set, else certifi."""


McpToolNames = list[Annotated[str, msgspec.Meta(min_length=1)]]
Seconds = Annotated[float, msgspec.Meta(gt=0)]


class McpServerTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[mcp.servers.NAME]` (docs/mcp.md): a server run as a child process (`command`,
    `args`, `env`, `cwd`: stdio) or reached at `url` (streamable HTTP, with `headers`).
    Exactly one of `command` and `url` is checked by `codecoder.mcp.config`."""

    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    enabled: bool = True
    startup_timeout: Seconds = 10.0
    tool_timeout: Seconds = 120.0
    include: McpToolNames = []
    """Only these of the server's tools (their MCP names); empty: all."""
    exclude: McpToolNames = []
    sandbox: bool | None = None
    """Whether a stdio server runs in the session's sandbox. Absent: a project's does,
    yours does not (most are `npx`/`uvx` and need their caches and the network). A
    project's server that says false does not run (mcp/config.py)."""


class McpTable(_Table, frozen=True, forbid_unknown_fields=True):
    servers: dict[str, McpServerTable] = {}


class WebTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[web]`, read from the user's file only: a repository must not open your network."""

    allow_private: list[str] = []
    """Exceptions to web_fetch's address guard: a host (`localhost`), a host and port
    (`localhost:3000`, `[::1]:8080`), an address (`10.1.2.3`) or a range (`10.0.0.0/8`)."""


class SandboxTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[sandbox]` (docs/sandbox.md), read from the user's file only: a repository must
    not switch its own sandbox off or give its commands the network."""

    mode: SandboxMode | None = None
    """Absent: `workspace-write` in full-auto where bubblewrap works, else off."""
    network: bool = False
    """Every confined command gets the network."""
    network_allow: list[str] = []
    """run_command patterns (`npm install:*`) of the commands that get the network."""
    max_processes: Annotated[int, msgspec.Meta(ge=0)] | None = None
    """Processes and threads one confined command may have at once; 0: no limit;
    absent: 2048 (sandbox/limits.py DEFAULT_MAX)."""


class HookTable(_Table, frozen=True, forbid_unknown_fields=True):
    """One `[[hooks.EVENT]]` (docs/hooks.md): a command of yours run at that point of a
    session, a JSON object on its stdin."""

    command: Annotated[str, msgspec.Meta(min_length=1)]
    matcher: str | None = None
    """pre_tool / post_tool only: tool names (`*` globs, `|` between alternatives)."""
    timeout: Seconds = 60.0
    """Seconds before the hook's process tree is killed."""
    sandbox: bool = True
    """false: runs on the host where the session's commands are confined. Only the user's
    own hooks: a project's hook that says so does not run (hooks/config.py)."""


class HooksTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[[hooks.EVENT]]` tables, by event. A project's run only in a trusted folder and
    once approved (`codecoder hooks approve`)."""

    session_start: list[HookTable] = []
    user_prompt: list[HookTable] = []
    pre_tool: list[HookTable] = []
    post_tool: list[HookTable] = []
    pre_compact: list[HookTable] = []
    stop: list[HookTable] = []


class RecordTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[record]`: what a replay needs is kept with each session (`codecoder replay`)."""

    enabled: bool = True


class UndoTable(_Table, frozen=True, forbid_unknown_fields=True):
    """Read from the user's file only: the checkpoint store is outside the workspace, on
    the user's disk (docs/undo.md, "How big the store gets")."""

    max_file_mb: PositiveInt = 50
    max_store_mb: PositiveInt = 1024


class DaemonTable(_Table, frozen=True, forbid_unknown_fields=True):
    """`[daemon]`, read from the user's file only: when `codecoder daemon` and `codecoder
    acp` unload a session no client is attached to and no turn runs in (docs/acp.md)."""

    idle_unload: Seconds = 600.0
    """Seconds such a session stays loaded."""
    max_idle: Annotated[int, msgspec.Meta(ge=0)] = 16
    """Such sessions kept loaded at most; past it the one idle longest is unloaded."""


class Config(_Table, frozen=True, forbid_unknown_fields=True):
    """A `config.toml` / `config.local.toml`."""

    model: str | None = None
    providers: dict[str, ProviderTable] = {}
    prices: dict[str, PriceTable] = {}
    models: dict[str, ModelTable] = {}
    compaction: CompactionTable = CompactionTable()
    subagents: SubagentsTable = SubagentsTable()
    permissions: PermissionsTable = PermissionsTable()
    shell: ShellTable = ShellTable()
    http: HttpTable = HttpTable()
    sandbox: SandboxTable = SandboxTable()
    mcp: McpTable = McpTable()
    web: WebTable = WebTable()
    record: RecordTable = RecordTable()
    undo: UndoTable = UndoTable()
    hooks: HooksTable = HooksTable()
    daemon: DaemonTable = DaemonTable()


class TrustedFile(_Table, frozen=True, forbid_unknown_fields=True):
    """`$XDG_CONFIG_HOME/codecoder/trusted.toml` (written by `codecoder trust`)."""

    folders: list[str] = []


class ShellSettings(msgspec.Struct, frozen=True):
    """What `[shell]` says, for the code that builds a command's environment."""

    env_keep: tuple[str, ...] = ()
    env_drop: tuple[str, ...] = ()


# --- typed access ----------------------------------------------------------------------

T = TypeVar("T", bound=msgspec.Struct)


def section(config: Mapping[str, Any], name: str, table: type[T]) -> T:
    """A validated file's table `name` as its Struct (defaults where it is absent)."""
    return msgspec.convert(config.get(name, {}), type=table)


def shell_settings(
    user: Mapping[str, Any], project: Mapping[str, Any] | None = None
) -> ShellSettings:
    """`[shell]` of the user's config; a project (trusted) may add to `env_drop` but never
    to `env_keep`, since a repository must not be able to ask for the user's secrets."""
    mine = section(user, "shell", ShellTable)
    theirs = section(project or {}, "shell", ShellTable)
    drop = dict.fromkeys([*mine.env_drop, *theirs.env_drop])
    return ShellSettings(env_keep=tuple(mine.env_keep), env_drop=tuple(drop))


# --- checking a file -------------------------------------------------------------------


class SchemaError(Exception):
    """One problem in one file, worded for the user (config turns it into a ConfigError)."""


def check(data: Mapping[str, Any], text: str, source: str, schema: type[msgspec.Struct]) -> None:
    """Raise SchemaError (`source:line: what; did you mean …?`) for the first unknown
    name or wrong value in `data`, the parsed form of `text`."""
    problem = _walk(data, schema, ())
    if problem is None:
        return
    path, message = problem
    line = locate(text, path)
    where = f"{source}:{line}" if line is not None else source
    raise SchemaError(f"{where}: {message}")


KeyPath = tuple[str | int, ...]


def _walk(value: Any, tp: Any, path: KeyPath) -> tuple[KeyPath, str] | None:
    tp = _strip_optional(tp)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _walk_table(value, tp, path)
    origin = get_origin(tp)
    if origin is dict and _is_table(get_args(tp)[1]):
        if not isinstance(value, dict):
            return path, f"{_name(path)} must be a table"
        for key, item in value.items():
            found = _walk(item, get_args(tp)[1], (*path, str(key)))
            if found is not None:
                return found
        return None
    if origin is list and _is_table(get_args(tp)[0]):
        if not isinstance(value, list):
            return path, f"{_name(path)} must be a list of tables"
        for index, item in enumerate(value):
            found = _walk(item, get_args(tp)[0], (*path, index))
            if found is not None:
                return found
        return None
    try:
        msgspec.convert(value, type=tp)
    except msgspec.ValidationError:
        return path, f"{_name(path)} must be {describe(tp)} ({_culprit(value, tp)})"
    return None


def _culprit(value: Any, tp: Any) -> str:
    """What is wrong with a value: "it is 2", or for a list or table, its first bad item."""
    origin = get_origin(_strip_optional(tp))
    args = get_args(_strip_optional(tp))
    items: list[tuple[str, Any]] = []
    if origin is list and isinstance(value, list):
        items = [(f"item {n}", item) for n, item in enumerate(value, 1)]
    elif origin is dict and isinstance(value, dict):
        items = [(str(key), item) for key, item in value.items()]
    for label, item in items:
        try:
            msgspec.convert(item, type=args[-1])
        except msgspec.ValidationError:
            return f"{label} is {_shown(item)}"
    return f"it is {_shown(value)}"


def _walk_table(
    value: Any, table: type[msgspec.Struct], path: KeyPath
) -> tuple[KeyPath, str] | None:
    if not isinstance(value, dict):
        return path, f"{_name(path)} must be a table (it is {_shown(value)})"
    fields = _fields(table)
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            return (*path, key), _unknown(key, item, path, sorted(fields))
        found = _walk(item, field.type, (*path, key))
        if found is not None:
            return found
    for name, field in fields.items():
        if field.required and name not in value:
            return path, f"{_header(path) or 'the file'} needs {name} ({describe(field.type)})"
    return None


@functools.cache
def _fields(table: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    """A table's keys (resolving the annotations is most of a check's cost: done once)."""
    return {f.encode_name: f for f in msgspec.structs.fields(table)}


def _unknown(key: str, value: Any, path: KeyPath, valid: Sequence[str]) -> str:
    import difflib

    is_table = isinstance(value, dict)
    what = f"table {_header((*path, key))}" if is_table else f"key `{key}`"
    where = f" in {_header(path)}" if path and not is_table else ""
    message = f"unknown {what}{where}"
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        suggestion = _header((*path, close[0])) if is_table else f"`{close[0]}`"
        message += f"; did you mean {suggestion}?"
    home = [t for t in _homes(key) if t != path]
    if home and not close:
        message += f"; `{key}` belongs {_place(home[0])}"
    elif home:
        message += f" (`{key}` belongs {_place(home[0])})"
    if not close and not home:
        names = ", ".join(valid)
        message += f" (valid here: {names})" if names else ""
    return message


def _homes(key: str) -> list[KeyPath]:
    """The tables of `Config` where `key` is a valid key (for "belongs in …")."""
    out: list[KeyPath] = []

    def visit(table: type[msgspec.Struct], path: KeyPath) -> None:
        for field in _fields(table).values():
            inner = _strip_optional(field.type)
            if field.encode_name == key:
                out.append(path)
            if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
                visit(inner, (*path, field.encode_name))
            elif get_origin(inner) is dict and _is_table(get_args(inner)[1]):
                visit(get_args(inner)[1], (*path, field.encode_name, "NAME"))

    visit(Config, ())
    return out


def _place(path: KeyPath) -> str:
    return f"in {_header(path)}" if path else "at the top, above the first [table]"


def _is_table(tp: Any) -> bool:
    tp = _strip_optional(tp)
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) is Union or type(tp).__name__ == "UnionType":
        rest = [arg for arg in get_args(tp) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp


def describe(tp: Any) -> str:
    """A type in words: "a whole number at least 1", "a list of strings", …"""
    tp = _strip_optional(tp)
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metas = get_args(tp)
        words = [describe(base)]
        for meta in metas:
            if isinstance(meta, msgspec.Meta):
                words += _bounds(meta)
        return " ".join(words)
    if origin is Literal:
        return "one of " + ", ".join(_shown(arg) for arg in get_args(tp))
    if origin is list:
        return f"a list of {_plural(describe(get_args(tp)[0]))}"
    if origin is dict:
        inner = get_args(tp)[1]
        return "a table" if inner is Any else f"a table of {_plural(describe(inner))}"
    names = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}
    if tp in names:
        return names[tp]
    return "a table" if _is_table(tp) else "a value"


def _bounds(meta: msgspec.Meta) -> list[str]:
    words: list[str] = []
    for attr, word in (("gt", "above"), ("ge", "at least"), ("lt", "below"), ("le", "at most")):
        bound = getattr(meta, attr)
        if bound is not None:
            words.append(f"{word} {bound:g}")
    return [" and ".join(words)] if words else []


def _plural(phrase: str) -> str:
    """ "a string" → "strings", "a whole number at least 1" → "whole numbers at least 1"."""
    words = phrase.split(" ")
    if words[0] in ("a", "an"):
        words = words[1:]
    nouns = {"string", "number", "table", "value"}
    for index, word in enumerate(words):
        if word in nouns:
            words[index] = word + "s"
            break
    return " ".join(words)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:39] + "…"
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _header(path: KeyPath) -> str:
    if not path:
        return ""
    parts = [p if isinstance(p, str) and _BARE_KEY.fullmatch(p) else _quoted(p) for p in path]
    return "[" + ".".join(parts) + "]"


def _quoted(part: str | int) -> str:
    if isinstance(part, int):
        return str(part)
    return '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _name(path: KeyPath) -> str:
    """How a message names a value: `model`, `[compaction] threshold`, `[providers.x]`."""
    if not path:
        return "the file"
    if len(path) == 1:
        return str(path[0])
    return f"{_header(path[:-1])} {path[-1]}"


# --- where a key is written ------------------------------------------------------------


def locate(text: str, path: KeyPath) -> int | None:
    """The line of `text` (valid TOML) that defines `path`: its `key =` line or its
    `[table]` header; for a path only implied (`a.b = 1` implies `a`), the first line
    below it. None when it cannot be found."""
    try:
        lines = _KeyLines(text).scan()
    except IndexError:  # text the scanner does not follow: no line, still the message
        return None
    if path in lines:
        return lines[path]
    below = [line for key, line in lines.items() if key[: len(path)] == path]
    return min(below) if below else None


class _KeyLines:
    """A small reader of TOML's structure (keys, headers, values), enough to map each
    key path to the line it is written on; values are skipped, not parsed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.lines: dict[KeyPath, int] = {}
        self.arrays: dict[KeyPath, int] = {}

    def scan(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self._blank(newlines=True)
            if self.pos >= len(self.text):
                return self.lines
            if self.text.startswith("[[", self.pos):
                self.pos += 2
                key = self._key()
                self.pos += 2  # ]]
                index = self.arrays.get(key, -1) + 1
                self.arrays[key] = index
                table = (*key, index)
                self._note(table)
            elif self.text[self.pos] == "[":
                self.pos += 1
                table = self._key()
                self.pos += 1  # ]
                self._note(table)
            else:
                self._pair(table)

    def _note(self, path: KeyPath) -> None:
        self.lines.setdefault(path, self.line)

    def _pair(self, table: KeyPath) -> None:
        path = (*table, *self._key())
        self._note(path)
        self._blank()
        self.pos += 1  # =
        self._blank()
        self._value(path)

    def _key(self) -> KeyPath:
        parts: list[str] = []
        while True:
            self._blank()
            char = self.text[self.pos]
            if char in "\"'":
                parts.append(self._string())
            else:
                found = _BARE_KEY.match(self.text, self.pos)
                if found is None:
                    raise IndexError(self.pos)
                parts.append(found.group())
                self.pos = found.end()
            self._blank()
            if self.pos < len(self.text) and self.text[self.pos] == ".":
                self.pos += 1
                continue
            return tuple(parts)

    def _value(self, path: KeyPath) -> None:
        char = self.text[self.pos]
        if char in "\"'":
            self._string()
        elif char == "[":
            self.pos += 1
            index = 0
            while True:
                self._blank(newlines=True)
                if self.text[self.pos] == "]":
                    self.pos += 1
                    return
                if self.text[self.pos] == ",":
                    self.pos += 1
                    index += 1
                    continue
                self._value((*path, index))
        elif char == "{":
            self.pos += 1
            while True:
                self._blank()
                if self.text[self.pos] == "}":
                    self.pos += 1
                    return
                if self.text[self.pos] == ",":
                    self.pos += 1
                    continue
                self._pair(path)
        else:
            while self.pos < len(self.text) and self.text[self.pos] not in ",]}#\n":
                self.pos += 1

    def _string(self) -> str:
        quote = self.text[self.pos]
        triple = self.text.startswith(quote * 3, self.pos)
        self.pos += 3 if triple else 1
        start = self.pos
        while True:
            char = self.text[self.pos]
            if char == "\\" and quote == '"':
                self.pos += 2
                continue
            if char == "\n":
                self.line += 1
            if char == quote and (not triple or self.text.startswith(quote * 3, self.pos)):
                end = self.pos
                if triple:
                    self.pos += 3
                    while self.pos < len(self.text) and self.text[self.pos] == quote:
                        self.pos += 1  # `""""` ends with a quote inside the string
                    return self.text[start:end]
                self.pos += 1
                raw = self.text[start:end]
                return raw.replace('\\"', '"').replace("\\\\", "\\") if quote == '"' else raw
            self.pos += 1

    def _blank(self, *, newlines: bool = False) -> None:
        """Skip spaces and tabs (and comments); with `newlines`, also line ends."""
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in " \t\r":
                self.pos += 1
            elif char == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif char == "\n" and newlines:
                self.line += 1
                self.pos += 1
            else:
                return
