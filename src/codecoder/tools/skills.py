"""The `skill` tool: the system prompt lists skills by name and description only; this
loads one skill's instructions, and names the files bundled with it, when the model
decides the task needs it (DESIGN.md §5).

Skills are looked up again on each call from the call's workspace (a few directory
reads), so a skill added during the session can be loaded as soon as the user says so.

This tool imports `context`, which finds and parses skills for the prompt too: the
dependency runs tools → context (both edges of the kernel), never into the kernel, and
the prompt's index and this tool's bodies cannot disagree on what a skill is.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from codecoder.context.files import project_levels
from codecoder.context.frontmatter import FrontMatterError
from codecoder.context.skills import Skill, SkillCatalogue, discover_skills
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext
from codecoder.tools.base import TypedTool


class SkillArgs(msgspec.Struct, frozen=True):
    name: Annotated[str, msgspec.Meta(description="The skill's name, as listed under Skills.")]


class SkillTool(TypedTool[SkillArgs]):
    name = "skill"
    description = (
        "Load the full instructions of a skill listed in the system prompt under Skills, "
        "with the list of files bundled in its folder. Call it before starting a task "
        "that matches the skill's description, then follow what it says."
    )
    risk: Risk = "read"
    args_type = SkillArgs

    def call(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        catalogue = discover_skills(project_levels(ctx.workspace))
        skill = catalogue.get(args.name.strip())
        if skill is None:
            return tool_result(ctx.call_id, _unknown(args.name, catalogue), status="error")
        try:
            body = skill.body()
        except (OSError, FrontMatterError) as exc:
            message = f"skill {skill.name!r} could not be read: {_reason(exc)}"
            return tool_result(ctx.call_id, message, status="error")
        return tool_result(ctx.call_id, render(skill, body))


def render(skill: Skill, body: str) -> str:
    files, more = skill.bundled_files()
    lines = [f"# Skill: {skill.name}", f"Folder: {skill.folder}", "", body or "(no instructions)"]
    if files:
        lines += ["", "Bundled files (relative to the folder; read them as the instructions say):"]
        lines += [f"- {path}" for path in files]
        if more:
            lines.append("[… cut: more files not listed]")
    return "\n".join(lines)


def _unknown(name: str, catalogue: SkillCatalogue) -> str:
    known = ", ".join(skill.name for skill in catalogue.skills) or "none"
    text = f"unknown skill {name!r}; known skills: {known}"
    if catalogue.warnings:
        text += "\nleft out because their SKILL.md could not be read:\n" + "\n".join(
            f"- {warning}" for warning in catalogue.warnings
        )
    return text


def _reason(exc: OSError | FrontMatterError) -> str:
    if isinstance(exc, FrontMatterError):
        return str(exc)
    return exc.strerror or str(exc)
