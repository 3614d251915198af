"""Paths in the workspace, and walking it the way git and ripgrep see it.

The workspace boundary itself (`resolve`, `is_inside`) is in codecoder/boundary.py,
shared with the permission layer. This is the one tree walker that
list_dir, glob and grep's pure-Python path share: sorted per directory (ripgrep's
`--sort path` order), `.git` never entered, `.gitignore`, `.ignore` and `.rgignore`
honoured as ripgrep honours them.

Why not `pathspec` for the ignore rules: pathspec matches a file list, so a pattern like
`build/` also matches everything *under* build/. A walker prunes ignored directories
instead and matches each path on its own, as git and ripgrep do; that difference shows as
soon as a search starts inside an ignored directory, and grep must give ripgrep's answer.
The matcher below follows ripgrep's `ignore` crate (gitignore lines to globset globs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple


def display(workspace: Path, path: str | Path) -> str:
    """How a tool shows the real `path` (as `resolve` or `walk` give it) to the model:
    relative to the workspace when inside it, absolute otherwise."""
    text = os.fspath(path)
    real_ws = os.path.realpath(workspace)
    if Path(text).is_relative_to(real_ws):
        text = os.path.relpath(text, real_ws)
    return printable(text.replace(os.sep, "/"))


def printable(name: str) -> str:
    """A file name fit for the model: undecodable bytes (surrogate escapes) become U+FFFD,
    and a name with a newline or another unprintable character is shown quoted with
    escapes (Python's repr), so a crafted name cannot pose as extra lines of a listing."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text if text.isprintable() else repr(text)


# --- globs (gitignore lines, ripgrep --glob, the glob tool) --------------------------


class GlobRule(NamedTuple):
    """One gitignore-style line: `regex` matches a whole `/`-separated relative path."""

    regex: str
    negated: bool
    dir_only: bool


def parse_glob(line: str, *, anchored: bool = False) -> GlobRule | None:
    """A gitignore line as ripgrep reads it (None for blanks and comments). A glob with no
    inner slash matches at any depth unless `anchored`; a trailing slash matches
    directories only; `!` negates; `dir/**` matches what is inside dir."""
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    negated = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    elif line.startswith("!"):
        negated, line = True, line[1:]
    if line.startswith("/"):
        anchored, line = True, line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/") if dir_only else line
    if not line:
        return None
    if not anchored and "/" not in line and not line.startswith("**"):
        line = "**/" + line
    if line.endswith("/**"):
        line += "/*"
    return GlobRule(_translate(line), negated, dir_only)


def _translate(glob: str) -> str:
    """globset syntax to a Python regex: `*` and `?` stay within one path component,
    `**` as a whole component spans any number of them, `[...]` and `{a,b}` as usual."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**", i) and _whole_component(glob, i):
            recursive_tail = i + 2 == len(glob)
            out.append(".*" if recursive_tail else "(?:.*/)?")
            i += 2 if recursive_tail else 3
            continue
        piece, i = _translate_one(glob, i)
        out.append(piece)
    return "".join(out)


def _whole_component(glob: str, i: int) -> bool:
    return (i == 0 or glob[i - 1] == "/") and (i + 2 == len(glob) or glob[i + 2] == "/")


def _translate_one(glob: str, i: int) -> tuple[str, int]:
    """The regex for the glob token at `i`, and the index after it."""
    char = glob[i]
    if char == "*":
        while i < len(glob) and glob[i] == "*":
            i += 1
        return "[^/]*", i
    if char == "?":
        return "[^/]", i + 1
    if char == "\\" and i + 1 < len(glob):
        return re.escape(glob[i + 1]), i + 2
    if char == "[":
        return _char_class(glob, i)
    if char == "{" and "}" in glob[i:]:
        end = glob.index("}", i)
        alternatives = "|".join(_translate(alt) for alt in glob[i + 1 : end].split(","))
        return f"(?:{alternatives})", end + 1
    return re.escape(char), i + 1


def _char_class(glob: str, i: int) -> tuple[str, int]:
    j = i + 1
    if j < len(glob) and glob[j] in "!^":
        j += 1
    if j < len(glob) and glob[j] == "]":
        j += 1
    while j < len(glob) and glob[j] != "]":
        j += 1
    if j >= len(glob):
        return re.escape("["), i + 1
    body = glob[i + 1 : j]
    negate = body[0] in "!^"
    body = body[1:] if negate else body
    body = re.sub(r"([\\\[&~|^])", r"\\\1", body)
    return f"[{'^' if negate else ''}{body}]", j + 1


class GlobSet:
    """Gitignore semantics over many rules: the last rule that matches a path decides.
    `match` returns True (matched a plain rule), False (matched a `!` rule) or None."""

    __slots__ = ("_dirs", "_files", "_rules")

    def __init__(self, rules: Sequence[GlobRule]) -> None:
        self._rules = tuple(rules)
        self._files = self._combine(lambda rule: not rule.dir_only)
        self._dirs = self._combine(lambda rule: True)

    def _combine(self, keep: Callable[[GlobRule], bool]) -> re.Pattern[str] | None:
        # Alternatives in reverse order: the first that matches is the last rule in the file.
        parts = [
            f"(?P<r{n}>{rule.regex})"
            for n, rule in reversed(list(enumerate(self._rules)))
            if keep(rule)
        ]
        return re.compile("|".join(parts), re.DOTALL) if parts else None

    def __bool__(self) -> bool:
        return bool(self._rules)

    def match(self, rel: str, is_dir: bool) -> bool | None:
        combined = self._dirs if is_dir else self._files
        found = combined.fullmatch(rel) if combined is not None else None
        if found is None or found.lastgroup is None:
            return None
        return not self._rules[int(found.lastgroup[1:])].negated

    @property
    def has_whitelist(self) -> bool:
        return any(not rule.negated for rule in self._rules)


def compile_rules(lines: Sequence[str], *, anchored: bool = False, strict: bool = False) -> GlobSet:
    """A GlobSet from gitignore lines. A line that is not a valid glob is skipped, as git
    and ripgrep skip it, or with `strict` raises ValueError (a glob the model wrote)."""
    rules: list[GlobRule] = []
    for line in lines:
        rule = parse_glob(line, anchored=anchored)
        if rule is None:
            continue
        try:
            re.compile(rule.regex)
        except re.error as exc:
            if strict:
                raise ValueError(f"invalid glob {line!r}: {exc}") from exc
            continue
        rules.append(rule)
    return GlobSet(rules)


# --- ignore rules while walking ------------------------------------------------------


class _Level(NamedTuple):
    prefix: str  # the directory holding the ignore file, with a trailing separator
    rules: GlobSet


_IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")  # in ripgrep's order of precedence


class IgnoreRules(NamedTuple):
    """The ignore files in force for one directory, as ripgrep applies them: `.rgignore`,
    then `.ignore` (from every ancestor), then `.gitignore` (from the repository root down)
    and `.git/info/exclude`; within a kind the deepest file that matches decides. Outside
    a git repository `.gitignore` does not apply (git's rule and ripgrep's); a nested
    repository starts its `.gitignore` chain afresh."""

    stacks: tuple[tuple[_Level, ...], ...] = ((), (), ())
    exclude: _Level | None = None
    in_repo: bool = False

    def enter(self, directory: str, names: set[str] | frozenset[str]) -> IgnoreRules:
        stacks, exclude, in_repo = list(self.stacks), self.exclude, self.in_repo
        if ".git" in names:
            exclude = _load(directory, os.path.join(directory, ".git", "info", "exclude"))
            stacks[2], in_repo = (), True
        for kind, file in enumerate(_IGNORE_FILES):
            if file in names and (in_repo or file != ".gitignore"):
                level = _load(directory, os.path.join(directory, file))
                stacks[kind] = stacks[kind] if level is None else (*stacks[kind], level)
        return IgnoreRules(tuple(stacks), exclude, in_repo)

    def ignored(self, path: str, is_dir: bool) -> bool:
        for level in (*_deepest_first(self.stacks), self.exclude):
            if level is not None and path.startswith(level.prefix):
                verdict = level.rules.match(path[len(level.prefix) :], is_dir)
                if verdict is not None:
                    return verdict
        return False

    @classmethod
    def above(cls, root: str) -> IgnoreRules:
        """The rules that the ancestors of `root` put in force (not yet `root`'s own)."""
        ancestors: list[str] = []
        current = root
        while (parent := os.path.dirname(current)) != current:
            ancestors.append(parent)
            current = parent
        rules = cls()
        for directory in reversed(ancestors):
            present = {
                name
                for name in (".git", *_IGNORE_FILES)
                if os.path.lexists(os.path.join(directory, name))
            }
            rules = rules.enter(directory, present)
        return rules


def _deepest_first(stacks: tuple[tuple[_Level, ...], ...]) -> Iterator[_Level]:
    for stack in stacks:
        yield from reversed(stack)


def _load(directory: str, file: str) -> _Level | None:
    try:
        with open(file, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    rules = compile_rules(text.splitlines())
    prefix = directory if directory.endswith(os.sep) else directory + os.sep
    return _Level(prefix, rules) if rules else None


# --- the walker ----------------------------------------------------------------------

Override = Callable[[str, bool], "bool | None"]
"""(relative path, is_dir) -> True: include even if ignored, False: exclude, None: no say."""


class Entry(NamedTuple):
    path: str  # absolute
    rel: str  # relative to the walk's root, "/"-separated
    depth: int  # 1 for the root's own entries
    is_dir: bool  # a real directory (symlinks are never followed)
    is_file: bool  # a regular file, not a symlink
    is_symlink: bool


def walk(
    root: Path, *, max_depth: int | None = None, override: Override | None = None
) -> Iterator[Entry]:
    """Every entry below `root` that is not ignored, pre-order, each directory's entries
    sorted by name bytes. Unreadable directories are skipped, as ripgrep skips them."""
    top = os.fspath(root)
    stack = [_frame(top, "", 1, IgnoreRules.above(top))]
    while stack:
        entries, rel_prefix, depth, rules = stack[-1]
        item = next(entries, None)
        if item is None:
            stack.pop()
            continue
        entry = _entry(item, rel_prefix, depth)
        if _excluded(entry, rules, override):
            continue
        yield entry
        if entry.is_dir and (max_depth is None or depth < max_depth):
            stack.append(_frame(entry.path, entry.rel + "/", depth + 1, rules))


_Frame = tuple[Iterator[os.DirEntry[str]], str, int, IgnoreRules]


def _frame(directory: str, rel_prefix: str, depth: int, rules: IgnoreRules) -> _Frame:
    try:
        with os.scandir(directory) as scan:
            items = sorted(scan, key=lambda item: os.fsencode(item.name))
    except OSError:
        items = []
    rules = rules.enter(directory, {item.name for item in items})
    visible = (item for item in items if item.name != ".git")
    return visible, rel_prefix, depth, rules


def _entry(item: os.DirEntry[str], rel_prefix: str, depth: int) -> Entry:
    try:
        is_dir = item.is_dir(follow_symlinks=False)
        is_file = item.is_file(follow_symlinks=False)
        is_symlink = item.is_symlink()
    except OSError:
        is_dir = is_file = is_symlink = False
    return Entry(item.path, rel_prefix + item.name, depth, is_dir, is_file, is_symlink)


def _excluded(entry: Entry, rules: IgnoreRules, override: Override | None) -> bool:
    if override is not None:
        verdict = override(entry.rel, entry.is_dir)
        if verdict is not None:
            return not verdict
    return rules.ignored(entry.path, entry.is_dir)
