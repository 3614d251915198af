"""The skill and todo_write tools, run through Tool.run as the loop runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.context.files import project_levels
from codecoder.context.frontmatter import FrontMatterError
from codecoder.context.skills import discover_skills
from codecoder.kernel import codec
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, TodoItem, TodoUpdated
from codecoder.kernel.ports import Tool, ToolContext, ToolFailure
from codecoder.tools.skills import SkillTool
from codecoder.tools.todo import TodoWriteTool
from tests.context.helpers import skill_md, write


def context(workspace: Path, events: list[AgentEvent]) -> ToolContext:
    return ToolContext(
        call_id="call_0_0", cancel=CancelToken(), workspace=workspace, emit=events.append
    )


def test_both_tools_satisfy_the_kernel_protocol() -> None:
    for tool in (SkillTool(), TodoWriteTool()):
        assert isinstance(tool, Tool)
        assert tool.risk == "read"
        assert tool.parameters["type"] == "object"
        assert "$ref" not in json.dumps(tool.parameters)
    assert SkillTool().parameters["required"] == ["name"]


# --- skill ----------------------------------------------------------------------------


def test_skill_loads_the_body_and_lists_bundled_files(tmp_path: Path) -> None:
    folder = tmp_path / ".codecoder" / "skills" / "release"
    write(folder / "SKILL.md", skill_md("release", "Cut a release.", "\nRun scripts/cut.sh.\n"))
    write(folder / "scripts" / "cut.sh", "echo cut")
    write(folder / "reference.md", "ref")
    write(folder / ".hidden", "x")
    write(folder / ".git" / "config", "x")
    events: list[AgentEvent] = []
    result = SkillTool().run({"name": "release"}, context(tmp_path, events))
    assert result.status == "success"
    assert result.tool_call_id == "call_0_0"
    assert result.text == (
        f"# Skill: release\nFolder: {folder}\n\nRun scripts/cut.sh.\n\n"
        "Bundled files (relative to the folder; read them as the instructions say):\n"
        "- reference.md\n- scripts/cut.sh"
    )
    assert events == []


def test_the_nearest_skill_of_a_name_is_loaded(repo: Path) -> None:
    result = SkillTool().run({"name": "pdf"}, context(repo / "pkg", []))
    assert "Project body." in result.text
    user = SkillTool().run({"name": "notes"}, context(repo, []))
    assert f"Folder: {paths.config_dir() / 'skills' / 'notes'}" in user.text
    assert "Notes body." in user.text


def test_an_unknown_skill_is_an_error_listing_the_known_ones(repo: Path) -> None:
    result = SkillTool().run({"name": "deploy"}, context(repo, []))
    assert result.status == "error"
    assert result.text.startswith("unknown skill 'deploy'; known skills: notes, pdf, release\n")
    assert ".codecoder/skills/broken/SKILL.md:3:" in result.text


def test_bundled_files_are_capped(tmp_path: Path) -> None:
    folder = tmp_path / ".codecoder" / "skills" / "many"
    write(folder / "SKILL.md", skill_md("many", "Many files.", "body"))
    for index in range(105):
        write(folder / "data" / f"f{index:03d}.txt", "x")
    text = SkillTool().run({"name": "many"}, context(tmp_path, [])).text
    assert "- data/f099.txt\n[… cut: more files not listed]" in text
    assert "f100" not in text


def test_a_large_skill_body_is_cut_with_a_note(tmp_path: Path) -> None:
    folder = tmp_path / ".codecoder" / "skills" / "big"
    write(folder / "SKILL.md", skill_md("big", "Big.", "line\n" * 10_000))
    text = SkillTool().run({"name": "big"}, context(tmp_path, [])).text
    assert "[… cut: " in text and "bytes of .codecoder/skills/big/SKILL.md not shown]" in text


def test_a_skill_broken_after_discovery_raises_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / ".codecoder" / "skills" / "later"
    write(folder / "SKILL.md", skill_md("later", "Fine at first.", "body"))
    skill = discover_skills(project_levels(tmp_path)).get("later")
    assert skill is not None
    write(folder / "SKILL.md", "---\nname: later\n")
    with pytest.raises(FrontMatterError, match=r"^\.codecoder/skills/later/SKILL\.md:1: "):
        skill.body()


def test_skill_arguments_are_validated() -> None:
    with pytest.raises(ToolFailure) as caught:
        SkillTool().run({"skill": "x"}, context(Path.cwd(), []))
    assert caught.value.error.kind == "invalid_args"


# --- todo_write -----------------------------------------------------------------------


def test_todo_write_emits_the_list_and_renders_it(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    args = {
        "items": [
            {"content": "Read the parser", "status": "done"},
            {"content": "  Fix   the bug ", "status": "in_progress"},
            {"content": "Run the tests"},
        ]
    }
    result = TodoWriteTool().run(args, context(tmp_path, events))
    expected = (
        TodoItem("Read the parser", "done"),
        TodoItem("Fix the bug", "in_progress"),
        TodoItem("Run the tests", "pending"),
    )
    assert events == [TodoUpdated(items=expected)]
    assert result.status == "success"
    assert result.text == (
        "Checklist updated (1 of 3 done):\n[x] Read the parser\n[>] Fix the bug\n[ ] Run the tests"
    )


def test_todo_updated_reaches_the_json_wire() -> None:
    event = TodoUpdated(items=(TodoItem("a", "in_progress"),))
    assert json.loads(codec.encode(event)) == {
        "type": "todo_updated",
        "items": [{"content": "a", "status": "in_progress"}],
    }


def test_an_empty_list_clears_the_checklist(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    result = TodoWriteTool().run({"items": []}, context(tmp_path, events))
    assert events == [TodoUpdated(items=())]
    assert result.text == "Checklist cleared."


def test_two_items_in_progress_are_accepted_with_a_note(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    items = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    result = TodoWriteTool().run({"items": items}, context(tmp_path, events))
    assert len(events) == 1
    note = "Note: 2 items are in progress; finish one before starting another."
    assert result.text.endswith(note)


@pytest.mark.parametrize(
    "items",
    [
        [{"content": "a", "status": "started"}],
        [{"content": "   "}],
        [{"content": "a", "owner": "me"}],
        [{"content": f"{n}"} for n in range(101)],
        "not a list",
    ],
)
def test_bad_checklists_are_refused_without_an_event(tmp_path: Path, items: object) -> None:
    events: list[AgentEvent] = []
    with pytest.raises(ToolFailure) as caught:
        TodoWriteTool().run({"items": items}, context(tmp_path, events))
    assert caught.value.error.kind == "invalid_args"
    assert events == []


def test_a_checklist_in_claude_codes_or_opencodes_shape_is_taken(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    todos = [
        {"content": "Read", "status": "completed", "activeForm": "Reading"},
        {"content": "Fix", "status": "in_progress", "id": "2", "priority": "high"},
    ]
    result = TodoWriteTool().run({"todos": todos}, context(tmp_path, events))
    assert events == [TodoUpdated(items=(TodoItem("Read", "done"), TodoItem("Fix", "in_progress")))]
    assert result.text.startswith("Checklist updated (1 of 2 done):")


def test_a_status_near_one_of_ours_is_pointed_at_it(tmp_path: Path) -> None:
    with pytest.raises(ToolFailure) as caught:
        TodoWriteTool().run({"items": [{"content": "a", "status": "don"}]}, context(tmp_path, []))
    assert caught.value.error.message.splitlines()[0] == (
        "invalid arguments for todo_write: invalid enum value 'don' (at `items[0].status`); "
        'did you mean "done"?'
    )
