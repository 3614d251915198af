"""Skills: folders holding a SKILL.md (front matter `name`, `description`; body: the
instructions) and any files the instructions refer to (DESIGN.md §5, §7).

The system prompt lists each skill by name and description only; the `skill` tool loads
a body on demand. Skills come from the user config dir's `skills/`, then from
`.codecoder/skills/` at every level from the repository root down to the workspace; a
later one replaces an earlier one of the same name, so the most specific wins. A SKILL.md
is read only if its real path is inside the config dir (user skills) or the repository
root (project skills): a linked folder or file leading elsewhere is left out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.context.files import KIB, Capped, capped_text, display_path, read_capped
from codecoder.context.frontmatter import FrontMatterError, parse, parse_named

SKILL_FILE = "SKILL.md"
SKILL_FILE_CAP = 32 * KIB
BUNDLED_FILES_SHOWN = 100


class Skill(msgspec.Struct, frozen=True):
    name: str
    description: str
    path: Path
    shown_as: str
    within: Path
    """The folder the file's real path must be inside (files.open_regular)."""

    @property
    def folder(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The instructions (the file without its front matter), capped with a note.
        Raises OSError or FrontMatterError when the file changed under us."""
        capped = read_capped(self.path, SKILL_FILE_CAP, self.within)
        front = parse(capped.text, self.shown_as)
        body = Capped(front.body.strip(), capped.omitted, capped.used)
        return capped_text(body, self.shown_as)

    def bundled_files(self) -> tuple[list[str], bool]:
        """Up to BUNDLED_FILES_SHOWN paths relative to the folder (hidden ones and the
        SKILL.md itself left out), in sorted walk order, and whether there were more."""
        found: list[str] = []
        for folder, dirnames, filenames in os.walk(self.folder):
            dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
            relative = Path(folder).relative_to(self.folder)
            for filename in sorted(filenames):
                if filename.startswith(".") or (relative == Path() and filename == SKILL_FILE):
                    continue
                if len(found) == BUNDLED_FILES_SHOWN:
                    return found, True
                found.append((relative / filename).as_posix())
        return found, False


class SkillCatalogue(msgspec.Struct, frozen=True):
    skills: tuple[Skill, ...]
    """Sorted by name, one per name."""
    warnings: tuple[str, ...]
    """One line per skill left out, `PATH:LINE: what is wrong`."""

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)


def skill_roots(levels: Sequence[Path]) -> list[tuple[Path, Path]]:
    """Where skills folders are looked for, least specific first, each with the folder
    its files must stay inside."""
    user = paths.config_dir()
    return [(user / "skills", user)] + [
        (level / ".codecoder" / "skills", levels[0]) for level in levels
    ]


def has_skills(levels: Sequence[Path]) -> bool:
    """Whether any skill root holds a `*/SKILL.md` (a few folder reads, no file read):
    without one the session offers no `skill` tool."""
    return any(_skill_files(root) for root, _ in skill_roots(levels))


def discover_skills(levels: Sequence[Path]) -> SkillCatalogue:
    """Every `*/SKILL.md` under the skill roots; `levels` run from the repository root
    down to the workspace (files.project_levels)."""
    by_name: dict[str, Skill] = {}
    warnings: list[str] = []
    base = levels[0] if levels else None
    for root, within in skill_roots(levels):
        for skill_file in _skill_files(root):
            shown_as = display_path(skill_file, base)
            try:
                skill = _read_skill(skill_file, shown_as, within)
            except FrontMatterError as exc:
                warnings.append(str(exc))
                continue
            except OSError as exc:
                warnings.append(f"{shown_as}: cannot be read: {exc.strerror or exc}")
                continue
            by_name[skill.name] = skill
    skills = tuple(sorted(by_name.values(), key=lambda skill: skill.name))
    return SkillCatalogue(skills=skills, warnings=tuple(warnings))


def _skill_files(root: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return []
    candidates = (Path(entry.path) / SKILL_FILE for entry in entries if entry.is_dir())
    return [path for path in candidates if path.is_file()]


def _read_skill(path: Path, shown_as: str, within: Path) -> Skill:
    capped = read_capped(path, SKILL_FILE_CAP, within)
    named = parse_named(capped.text, shown_as, default_name=path.parent.name)
    return Skill(
        name=named.name,
        description=named.description,
        path=path,
        shown_as=shown_as,
        within=within,
    )
