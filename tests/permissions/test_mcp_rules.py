"""Rules for tools of MCP servers: `mcp__git__*` globs in tool names, and a call judged as
a whole (never as the file or URL its argument names happen to suggest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codecoder.config import ConfigError
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Risk
from codecoder.permissions import RulePolicy
from codecoder.permissions.calls import MCP_PREFIX, Scope, ToolPart, analyse
from codecoder.permissions.modes import ApprovalMode
from codecoder.permissions.rules import parse_rule

from .helpers import call, trust_folder, write_project_rules, write_user_rules


class McpLikeTool:
    """What the policy sees of an MCP tool: its name, its risk, the arguments."""

    description = "a server's tool"
    risk: Risk = "execute"
    parameters: dict[str, Any] = {"type": "object"}

    def __init__(self, name: str) -> None:
        self.name = name

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        return args

    def run(self, args: dict[str, Any], ctx: Any) -> Any:
        raise AssertionError("the policy never runs a tool")


def mcp_call(name: str, **args: Any) -> tuple[McpLikeTool, ToolCall]:
    return McpLikeTool(name), ToolCall(id="call_1", name=name, args=args)


def load(
    workspace: Path,
    user: dict[str, list[str]] | None = None,
    project: dict[str, list[str]] | None = None,
    mode: ApprovalMode = "ask",
) -> RulePolicy:
    if user is not None:
        write_user_rules(user)
    if project is not None:
        write_project_rules(workspace, project)
        trust_folder(workspace)
    return RulePolicy.load(workspace, mode)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.mark.parametrize(
    ("rule", "tool", "expected"),
    [
        ("mcp__git__*", "mcp__git__status", True),
        ("mcp__git__*", "mcp__git__", True),
        ("mcp__git__*", "mcp__github__create_issue", False),
        ("mcp__git*", "mcp__github__create_issue", True),
        ("mcp__*__status", "mcp__git__status", True),
        ("mcp__*", "run_command", False),
        ("*", "run_command", True),
        ("mcp__git__status", "mcp__git__status", True),
        ("mcp__git__st.tus", "mcp__git__status", False),  # `.` is a literal, not a regex
    ],
)
def test_a_star_in_a_tool_name_is_a_glob(rule: str, tool: str, expected: bool) -> None:
    assert parse_rule(rule, "f").names(tool) is expected


def test_a_glob_never_names_a_family() -> None:
    """`re*` names read_file, but not the `read` family a shell redirection belongs to."""
    rule = parse_rule("re*", "f")
    assert rule.names("read_file")
    assert not rule.names("run_command", ("read",))


@pytest.mark.parametrize("text", ["mcp__git__*(x)", "*(domain:example.com)"])
def test_a_glob_takes_no_pattern(text: str) -> None:
    with pytest.raises(ConfigError, match="takes no pattern"):
        parse_rule(text, "config.toml")


def test_an_mcp_call_is_one_part_whatever_its_arguments(workspace: Path) -> None:
    tool, mcp = mcp_call("mcp__fs__write_file", path="src/a.py", url="http://10.0.0.1/")
    parts = analyse(tool, mcp, Scope(workspace, (workspace,)))
    assert parts == [ToolPart("mcp__fs__write_file", "execute")]
    assert tool.name.startswith(MCP_PREFIX)
    # the same arguments to a built-in are a file part and a URL part
    built_in, same = call("write_file", path="src/a.py")
    assert not isinstance(analyse(built_in, same, Scope(workspace, (workspace,)))[0], ToolPart)


def test_an_edit_rule_does_not_allow_an_mcp_tool_that_names_a_path(workspace: Path) -> None:
    policy = load(workspace, {"allow": ["edit(**)"]}, mode="auto-edit")
    assert policy.decide(*call("write_file", path="a.py")).verdict == "allow"
    decision = policy.decide(*mcp_call("mcp__fs__write_file", path="a.py"))
    assert decision.verdict == "ask"
    assert "no rule allows it" in decision.reason


def test_mcp_tools_ask_by_default_and_are_denied_headless(workspace: Path) -> None:
    assert load(workspace).decide(*mcp_call("mcp__git__status")).verdict == "ask"
    full_auto = load(workspace, mode="full-auto")
    assert full_auto.decide(*mcp_call("mcp__git__status")).verdict == "ask"
    headless = load(workspace, mode="never-ask").decide(*mcp_call("mcp__git__status"))
    assert headless.verdict == "deny"
    assert "never-ask" in headless.reason


def test_a_server_glob_allows_its_tools_and_a_deny_wins(workspace: Path) -> None:
    rules = {"allow": ["mcp__git__*"], "deny": ["mcp__git__push"]}
    policy = load(workspace, rules, mode="never-ask")
    allowed = policy.decide(*mcp_call("mcp__git__status"))
    assert allowed.verdict == "allow"
    assert "mcp__git__*" in allowed.reason
    assert policy.decide(*mcp_call("mcp__git__push")).verdict == "deny"
    assert policy.decide(*mcp_call("mcp__github__list")).verdict == "deny"


def test_a_project_deny_glob_beats_a_user_allow(workspace: Path) -> None:
    policy = load(workspace, {"allow": ["mcp__*"]}, {"deny": ["mcp__evil__*"]})
    assert policy.decide(*mcp_call("mcp__git__status")).verdict == "allow"
    denied = policy.decide(*mcp_call("mcp__evil__run"))
    assert denied.verdict == "deny"
    assert "mcp__evil__*" in denied.reason


def test_always_for_the_session_grants_that_tool_only(workspace: Path) -> None:
    policy = load(workspace)
    tool, first = mcp_call("mcp__git__status")
    assert policy.decide(tool, first).verdict == "ask"
    policy.remember(tool, first, "session")
    assert policy.decide(*mcp_call("mcp__git__status", repo="x")).verdict == "allow"
    assert policy.decide(*mcp_call("mcp__git__push")).verdict == "ask"
