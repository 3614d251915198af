"""Which MCP servers a session starts: the user's always, a trusted project's only once
that exact definition was approved (and again after it changed)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from codecoder.config import ConfigError, read_toml
from codecoder.mcp.config import Approvals, ServerSpec, approvals_file, select, servers_of

USER = "/home/u/.config/codecoder/config.toml"


def table(**servers: dict[str, Any]) -> dict[str, Any]:
    return {"mcp": {"servers": servers}}


def spec(name: str = "git", **fields: Any) -> ServerSpec:
    (found,) = servers_of(table(**{name: {"command": "mcp-server-git", **fields}}), "user", USER)
    return found


def test_a_server_table_is_checked_by_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp.servers.git]\ncommand = "x"\nstartup_timout = 5\n')
    with pytest.raises(ConfigError, match=re.escape("did you mean `startup_timeout`?")):
        read_toml(path)
    path.write_text('[mcp.servers.git]\ncommand = "x"\nstartup_timeout = 0\n')
    with pytest.raises(ConfigError, match="startup_timeout must be a number above 0"):
        read_toml(path)
    path.write_text(
        '[web]\nallow_private = ["localhost:3000"]\n[mcp.servers.a]\nurl = "http://h"\n'
    )
    assert read_toml(path)["web"] == {"allow_private": ["localhost:3000"]}


@pytest.mark.parametrize(
    ("server", "fragment"),
    [
        ({}, "needs either `command`"),
        ({"command": "x", "url": "http://h/mcp"}, "not both"),
        ({"url": "ftp://h/mcp"}, "http:// or https://"),
    ],
)
def test_a_server_needs_a_command_or_a_url(server: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        servers_of(table(x=server), "user", USER)


@pytest.mark.parametrize("name", ["a__b", "_a", "a_", "a b", "é", "x" * 33])
def test_a_server_name_cannot_blur_the_tool_names(name: str) -> None:
    with pytest.raises(ConfigError, match="server name"):
        servers_of(table(**{name: {"command": "x"}}), "user", USER)


def test_fields_become_the_spec() -> None:
    server = spec(args=["--repository", "."], include=["git_status"], startup_timeout=3)
    assert server.transport == "stdio"
    assert server.describe() == "mcp-server-git --repository ."
    assert server.startup_timeout == 3.0 and server.tool_timeout == 120.0
    assert server.wants("git_status") and not server.wants("git_push")
    excluded = spec(exclude=["git_push"])
    assert excluded.wants("git_status") and not excluded.wants("git_push")
    (http,) = servers_of(table(web={"url": "https://h/mcp"}), "user", USER)
    assert http.transport == "http" and http.describe() == "https://h/mcp"


def test_user_servers_start_and_disabled_ones_do_not(tmp_path: Path) -> None:
    user = table(git={"command": "g"}, off={"command": "o", "enabled": False})
    chosen = select(tmp_path, user, {})
    assert [s.name for s in chosen.servers] == ["git"]
    assert [(s.name, why) for s, why in chosen.left_out] == [("off", "disabled (enabled = false)")]


def test_a_project_server_starts_only_once_approved(tmp_path: Path) -> None:
    project = table(lint={"command": "node", "args": ["lint-server.js"]})
    first = select(tmp_path, {}, project)
    assert first.servers == ()
    ((left, why),) = first.left_out
    assert left.origin == "project" and left.workspace == str(tmp_path)
    assert "not approved yet" in why and "codecoder mcp approve lint" in why
    assert "node lint-server.js" in why
    Approvals.load().approve(left)
    assert [s.name for s in select(tmp_path, {}, project).servers] == ["lint"]
    assert json.loads(approvals_file().read_text())["entries"][0]["name"] == "lint"
    assert approvals_file().parent == paths.data_dir()


def test_a_changed_definition_must_be_approved_again(tmp_path: Path) -> None:
    project = table(lint={"command": "node", "args": ["lint-server.js"]})
    ((approved, _),) = select(tmp_path, {}, project).left_out
    Approvals.load().approve(approved)
    for changed in (
        {"command": "node", "args": ["evil.js"]},
        {"command": "node", "args": ["lint-server.js"], "env": {"NODE_OPTIONS": "-r x"}},
        {"command": "node", "args": ["lint-server.js"], "cwd": "elsewhere"},
    ):
        again = select(tmp_path, {}, table(lint=changed))
        assert again.servers == ()
        assert "its definition changed since you approved it" in again.left_out[0][1]
    # a timeout or a tool filter changes nothing that runs: still approved
    tuned = {"command": "node", "args": ["lint-server.js"], "startup_timeout": 30}
    assert [s.name for s in select(tmp_path, {}, table(lint=tuned)).servers] == ["lint"]


def test_an_approval_holds_for_its_folder_only(tmp_path: Path) -> None:
    project = table(lint={"command": "node", "args": ["lint-server.js"]})
    ((here, _),) = select(tmp_path / "a", {}, project).left_out
    Approvals.load().approve(here)
    assert select(tmp_path / "a", {}, project).servers != ()
    assert select(tmp_path / "b", {}, project).servers == ()


def test_a_project_server_cannot_take_a_users_name(tmp_path: Path) -> None:
    user = table(git={"command": "mcp-server-git"})
    project = table(git={"command": "sh", "args": ["-c", "curl evil"]})
    ((theirs, _),) = select(tmp_path, {}, project).left_out
    Approvals.load().approve(theirs)  # even approved
    chosen = select(tmp_path, user, project)
    assert [(s.name, s.origin) for s in chosen.servers] == [("git", "user")]
    assert "your own config defines a server 'git'" in chosen.left_out[0][1]


def test_an_unreadable_approvals_file_approves_nothing(tmp_path: Path) -> None:
    project = table(lint={"command": "node"})
    ((left, _),) = select(tmp_path, {}, project).left_out
    Approvals.load().approve(left)
    approvals_file().write_text("{not json")
    assert select(tmp_path, {}, project).servers == ()


def test_a_project_servers_cwd_is_its_folder(tmp_path: Path) -> None:
    (found,) = servers_of(
        table(a={"command": "x", "cwd": "tools"}), "project", "p", workspace=str(tmp_path)
    )
    assert found.working_dir() == str(tmp_path / "tools")
    (plain,) = servers_of(table(a={"command": "x"}), "project", "p", workspace=str(tmp_path))
    assert plain.working_dir() == str(tmp_path)


def test_an_approvals_file_in_the_earlier_format_still_approves_its_server() -> None:
    """A `mcp-approvals.json` as written before the approval stores were shared
    (approval_store.py): the user's approvals stay valid."""
    approvals_file().parent.mkdir(parents=True)
    approvals_file().write_text(
        '{\n  "entries": [\n    {\n      "workspace": "/home/me/projét",\n'
        '      "name": "lint",\n'
        '      "digest": "cb0d943af71b0ec6ebd2883d518958b4131df186291c97846d8f2ec8b5538ffc",\n'
        '      "definition": "node lint-server.js"\n    }\n  ]\n}'
    )
    lint = {"command": "node", "args": ["lint-server.js"], "env": {"B": "2", "A": "ü"}}
    workspace = Path("/home/me/projét")
    assert [s.name for s in select(workspace, {}, table(lint=lint)).servers] == ["lint"]
    changed = select(workspace, {}, table(lint={**lint, "args": ["evil.js"]}))
    assert changed.servers == () and "changed since you approved" in changed.left_out[0][1]
