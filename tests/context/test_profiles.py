"""Agent profiles: where they are found, which wins, and that their tools only narrow."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codecoder import paths
from codecoder.context.profiles import load_profiles, narrow_tools
from tests.context.helpers import write


def profile(name: str, description: str, extra: str = "", body: str = "Do it.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"


def test_profiles_from_user_and_project_levels(repo: Path) -> None:
    user = paths.config_dir() / "agents"
    write(user / "reviewer.md", profile("reviewer", "User reviewer.", "tools: [read_file, grep]\n"))
    write(user / "writer.md", profile("writer", "Writes docs.", "model: openai/gpt-5\n"))
    write(user / "notes.txt", "not a profile")
    project = repo / ".codecoder" / "agents"
    write(project / "reviewer.md", profile("reviewer", "Project reviewer.", "tools: read_file\n"))
    explorer_md = "---\ndescription: Looks.\n---\nLook."
    write(repo / "pkg" / ".codecoder" / "agents" / "explorer.md", explorer_md)
    warnings: list[str] = []
    profiles = load_profiles(repo / "pkg", warnings=warnings)
    assert [p.name for p in profiles] == ["explorer", "reviewer", "writer"]
    explorer, reviewer, writer = profiles
    assert (explorer.description, explorer.tools) == ("Looks.", None)
    assert explorer.instructions == "Look."
    assert reviewer.description == "Project reviewer."
    assert reviewer.tools == ("read_file",)
    assert reviewer.path == project / "reviewer.md"
    assert (writer.model, writer.tools, writer.instructions) == ("openai/gpt-5", None, "Do it.")
    assert warnings == []
    assert [p.name for p in load_profiles(repo)] == ["reviewer", "writer"]


def test_broken_profiles_are_left_out_and_reported(repo: Path) -> None:
    agents = repo / ".codecoder" / "agents"
    write(agents / "good.md", profile("good", "Fine.", "tools:\n  - grep\n  - glob\n"))
    write(agents / "nodesc.md", "---\nname: nodesc\n---\nbody\n")
    write(agents / "badtools.md", profile("badtools", "x", "tools:\n  a: b\n"))
    write(agents / "huge.md", profile("huge", "x", body="y" * 40_000))
    warnings: list[str] = []
    profiles = load_profiles(repo, warnings=warnings)
    assert [(p.name, p.tools) for p in profiles] == [("good", ("grep", "glob"))]
    assert warnings == [
        ".codecoder/agents/badtools.md:4: `tools` should be a list, not a mapping",
        ".codecoder/agents/huge.md:1: a profile may be at most 32 KiB; this one is larger",
        ".codecoder/agents/nodesc.md:1: a `description` is required in the front matter",
    ]
    assert [p.name for p in load_profiles(repo)] == ["good"]  # no list given: still no crash


def test_narrowing_keeps_the_granted_order_and_never_widens() -> None:
    granted = ["read_file", "list_dir", "glob", "grep"]
    assert narrow_tools(granted, None) == granted
    assert narrow_tools(granted, ["grep", "read_file"]) == ["read_file", "grep"]
    assert narrow_tools(granted, ["edit_file", "run_command", "grep"]) == ["grep"]
    assert narrow_tools(granted, []) == []


_names = st.sampled_from(["read_file", "grep", "glob", "edit_file", "run_command", "agent"])


@given(st.lists(_names, unique=True), st.none() | st.lists(_names))
def test_a_profile_never_adds_a_tool(granted: list[str], wanted: list[str] | None) -> None:
    narrowed = narrow_tools(granted, wanted)
    assert set(narrowed) <= set(granted)
    assert narrowed == [tool for tool in granted if tool in narrowed]
    if wanted is not None:
        assert set(narrowed) == set(granted) & set(wanted)
