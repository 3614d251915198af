"""Escalation: `run_command` with `sandbox: false` runs outside the sandbox, so the
policy always puts it to the user: no mode, no read-only list and no run_command allow
rule lets it through; an `unsandboxed(…)` rule can; a headless run denies it; the
answers grant or refuse the escalation itself (permissions/chain.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.config import ConfigError
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Tool
from codecoder.permissions import RulePolicy
from codecoder.permissions.chain import is_escalation

from .helpers import run, trust_folder, write_project_rules, write_user_rules


def escalate(command: str) -> tuple[Tool, ToolCall]:
    return run(command, sandbox=False)


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "full-auto", "read-only"])
def test_an_escalation_asks_in_every_mode_even_for_a_plain_read(tmp_path: Path, mode: str) -> None:
    policy = RulePolicy(tmp_path, mode)  # type: ignore[arg-type]
    assert policy.decide(*run("ls", sandbox=True)).verdict == "allow"
    decision = policy.decide(*escalate("ls"))
    assert decision.verdict == "ask"
    assert "outside the sandbox" in decision.reason


def test_full_auto_allows_the_confined_command_but_asks_for_the_escalation(
    tmp_path: Path,
) -> None:
    policy = RulePolicy(tmp_path, "full-auto")
    assert policy.decide(*run("make test")).verdict == "allow"
    assert policy.decide(*escalate("make test")).verdict == "ask"


def test_a_headless_run_denies_an_escalation_and_says_which_rule_would_allow_it(
    tmp_path: Path,
) -> None:
    write_user_rules({"allow": ["run_command(npm publish)"]})
    policy = RulePolicy.load(tmp_path, "never-ask")
    assert policy.decide(*run("npm publish")).verdict == "allow"
    decision = policy.decide(*escalate("npm publish"))
    assert decision.verdict == "deny"
    assert "outside the sandbox" in decision.reason


def test_an_unsandboxed_rule_allows_that_escalation_only(tmp_path: Path) -> None:
    write_user_rules({"allow": ["unsandboxed(npm publish:*)"]})
    policy = RulePolicy.load(tmp_path, "never-ask")
    decision = policy.decide(*escalate("npm publish --tag next"))
    assert decision.verdict == "allow"
    assert "rule unsandboxed(npm publish:*)" in decision.reason
    assert policy.decide(*escalate("npm install")).verdict == "deny"
    assert policy.decide(*escalate("npm publish && curl x | sh")).verdict == "deny"
    assert policy.decide(*escalate("npm publish $TAG")).verdict == "deny"  # not literal


def test_a_trusted_projects_unsandboxed_rule_counts_an_untrusted_ones_does_not(
    tmp_path: Path,
) -> None:
    write_project_rules(tmp_path, {"allow": ["unsandboxed(make deploy)"]})
    assert RulePolicy.load(tmp_path, "never-ask").decide(*escalate("make deploy")).verdict == (
        "deny"
    )
    trust_folder(tmp_path)
    assert RulePolicy.load(tmp_path, "never-ask").decide(*escalate("make deploy")).verdict == (
        "allow"
    )


def test_deny_and_ask_rules_still_hold_for_an_escalation(tmp_path: Path) -> None:
    write_user_rules(
        {
            "allow": ["unsandboxed(git:*)"],
            "ask": ["run_command(git push:*)"],
            "deny": ["run_command(git reset:*)"],
        }
    )
    policy = RulePolicy.load(tmp_path, "full-auto")
    assert policy.decide(*escalate("git fetch")).verdict == "allow"
    assert policy.decide(*escalate("git push origin")).verdict == "ask"
    assert policy.decide(*escalate("git reset --hard")).verdict == "deny"


def test_a_bare_unsandboxed_deny_rule_forbids_every_escalation_but_no_command(
    tmp_path: Path,
) -> None:
    write_user_rules({"deny": ["unsandboxed"], "allow": ["unsandboxed(make:*)"]})
    policy = RulePolicy.load(tmp_path, "full-auto")
    assert policy.decide(*escalate("make")).verdict == "deny"
    assert policy.decide(*run("make")).verdict == "allow"


def test_an_unsandboxed_ask_rule_asks(tmp_path: Path) -> None:
    write_user_rules({"allow": ["unsandboxed(make:*)"], "ask": ["unsandboxed(make deploy)"]})
    policy = RulePolicy.load(tmp_path, "never-ask")
    assert policy.decide(*escalate("make test")).verdict == "allow"
    assert policy.decide(*escalate("make deploy")).verdict == "deny"  # asked; nobody to ask


def test_a_session_grant_of_a_command_does_not_cover_its_escalation(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path, "ask")
    tool, request = run("make test")
    policy.remember(tool, request, "session")
    assert policy.decide(*run("make test")).verdict == "allow"
    assert policy.decide(*escalate("make test")).verdict == "ask"


def test_always_this_session_for_an_escalation_covers_that_escalation(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path, "ask")
    tool, request = escalate("make test")
    assert policy.decide(tool, request).verdict == "ask"
    policy.remember(tool, request, "session")
    assert policy.decide(*escalate("make test")).verdict == "allow"
    assert policy.decide(*escalate("make lint")).verdict == "ask"


def test_always_this_project_for_an_escalation_writes_an_unsandboxed_rule(
    tmp_path: Path,
) -> None:
    policy = RulePolicy(tmp_path, "ask")
    tool, request = escalate("npm publish --dry-run")
    policy.decide(tool, request)
    policy.remember(tool, request, "project")
    written = tomllib.loads((paths.project_dir(tmp_path) / "config.local.toml").read_text())
    assert written["permissions"]["allow"] == ["unsandboxed(npm publish --dry-run)"]


def test_deny_this_session_for_an_escalation_refuses_only_the_escalation(tmp_path: Path) -> None:
    policy = RulePolicy(tmp_path, "full-auto")
    tool, request = escalate("make test")
    policy.forbid(tool, request)
    assert policy.decide(*escalate("make test")).verdict == "deny"
    assert policy.decide(*run("make test")).verdict == "allow"
    plain_tool, plain = run("make lint")
    policy.forbid(plain_tool, plain)  # refusing the command refuses its escalation too
    assert policy.decide(*escalate("make lint")).verdict == "deny"


def test_anything_but_true_is_an_escalation(tmp_path: Path) -> None:
    """The policy judges checked arguments (a `sandbox` of 0 is False by then), but a
    value that reached it unchecked must not slip past: any `sandbox` but true asks."""
    for value, expected in ((False, True), (True, False), (None, True), (0, True), ("", True)):
        tool, request = run("ls", sandbox=value)
        assert is_escalation(tool, request) is expected
    tool, request = run("ls")
    assert is_escalation(tool, request) is False


def test_a_bad_unsandboxed_rule_is_a_config_error(tmp_path: Path) -> None:
    write_user_rules({"allow": ["unsandboxed(npm *)"]})
    with pytest.raises(ConfigError, match="trailing"):
        RulePolicy.load(tmp_path)
