"""Named agent profiles: `agents/*.md` in the user config dir and `.codecoder/agents/*.md`
at every level from the repository root down to the workspace (issue 6, item 3).

A profile's front matter has `name` (default: the file name), `description` (required:
the model chooses a profile by it), `tools` (optional list) and `model` (optional
`provider/model`); the body is the sub-agent's instructions. A profile can only narrow
the tools a sub-agent is granted, never widen them (DESIGN.md invariant 5): `narrow_tools`
is the one place that combines the two. Like SKILL.md files, a profile is read only if its
real path is inside the config dir (user profiles) or the repository root (project ones).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.context.files import KIB, display_path, project_levels, read_capped
from codecoder.context.frontmatter import FrontMatterError, parse_named

PROFILE_FILE_CAP = 32 * KIB


class AgentProfile(msgspec.Struct, frozen=True):
    name: str
    description: str
    instructions: str
    tools: tuple[str, ...] | None
    """None: the profile does not restrict the granted tools."""
    model: str | None
    path: Path


def profile_roots(levels: Sequence[Path]) -> list[tuple[Path, Path]]:
    """Where profiles are looked for, least specific first, each with the folder its
    files must stay inside."""
    user = paths.config_dir()
    return [(user / "agents", user)] + [
        (level / ".codecoder" / "agents", levels[0]) for level in levels
    ]


def load_profiles(workspace: Path, *, warnings: list[str] | None = None) -> list[AgentProfile]:
    """The profiles seen from `workspace`, sorted by name; a project profile replaces a
    user one of the same name, a deeper one a shallower one. A broken file is left out
    and described in `warnings` (when given)."""
    levels = project_levels(workspace)
    by_name: dict[str, AgentProfile] = {}
    for root, within in profile_roots(levels):
        for path in _profile_files(root):
            shown_as = display_path(path, levels[0])
            try:
                profile = _read_profile(path, shown_as, within)
            except FrontMatterError as exc:
                _note(warnings, str(exc))
                continue
            except OSError as exc:
                _note(warnings, f"{shown_as}: cannot be read: {exc.strerror or exc}")
                continue
            by_name[profile.name] = profile
    return sorted(by_name.values(), key=lambda profile: profile.name)


def narrow_tools(granted: Sequence[str], profile_tools: Sequence[str] | None) -> list[str]:
    """The granted tools the profile names, in the granted order; a name the grant lacks
    is ignored, so a profile can never add a tool."""
    if profile_tools is None:
        return list(granted)
    wanted = set(profile_tools)
    return [tool for tool in granted if tool in wanted]


def _note(warnings: list[str] | None, message: str) -> None:
    if warnings is not None:
        warnings.append(message)


def _profile_files(root: Path) -> list[Path]:
    try:
        names = sorted(entry.name for entry in os.scandir(root) if entry.is_file())
    except OSError:
        return []
    return [root / name for name in names if name.endswith(".md")]


def _read_profile(path: Path, shown_as: str, within: Path) -> AgentProfile:
    capped = read_capped(path, PROFILE_FILE_CAP, within)
    if capped.omitted:
        message = f"a profile may be at most {PROFILE_FILE_CAP // KIB} KiB; this one is larger"
        raise FrontMatterError(shown_as, 1, message)
    named = parse_named(capped.text, shown_as, default_name=path.stem)
    front = named.front
    model = (front.text("model") or "").strip() or None
    return AgentProfile(
        name=named.name,
        description=named.description,
        instructions=front.body.strip(),
        tools=front.names("tools"),
        model=model,
        path=path,
    )
