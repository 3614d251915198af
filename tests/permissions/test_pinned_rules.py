"""A trusted project's allow rules apply only as the set the user approved (issue 25,
item 4): a set a `git pull` or a command changes after trust is not applied, and the
session says so once, until `codecoder trust` approves it again; an "always, this
project" answer is approved as it is written; ask and deny rules need no approval. Real
`codecoder` processes between sessions: trust, exec with the scripted model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)

CLI = [sys.executable, "-m", "codecoder"]
HELD_BACK = "the project's allow rules are not applied"


def codecoder(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, input=input, check=False
    )


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


class Run:
    """One headless session: its JSON lines and its stderr."""

    def __init__(self, workspace: Path, replies: list[Any], *extra: str, input: str = "") -> None:
        script = workspace.parent / "script.json"
        script.write_text(json.dumps(replies))
        done = codecoder(
            "exec", "--json", "--script", str(script), "-C", str(workspace), *extra, "go",
            input=input,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        self.lines = [json.loads(line) for line in done.stdout.splitlines()]
        self.err = done.stderr

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["type"] == kind]

    def status(self) -> str:
        """How the one tool call ended: `success`, or the error's kind (`denied`)."""
        (finished,) = self.of("tool_finished")
        return "success" if finished["status"] == "success" else finished["error"]["kind"]

    def held_back(self) -> list[str]:
        """The notices that say the project's allow rules are not applied, checked to be
        said the same on stderr."""
        said = [
            line["detail"] for line in self.of("status_update") if line["notice"] == "permissions"
        ]
        assert self.err.count(HELD_BACK) == len(said)
        return [text for text in said if text.startswith(HELD_BACK)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder the user trusted when it had no `.codecoder/`."""
    folder = tmp_path / "repo"
    folder.mkdir()
    assert codecoder("trust", str(folder)).returncode == 0
    return folder


def write(path: Path, text: str) -> None:
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)


# (rule, call, args to exec, what shows it ran): an escalation and a broad command rule.
UNSANDBOXED = ("unsandboxed", {"command": "touch escaped", "sandbox": False}, "escaped")
RM = ("run_command(rm:*)", {"command": "rm victim"}, "victim")


def ran(repo: Path, effect: str) -> bool:
    """Whether the call had its effect: `escaped` made, or `victim` removed."""
    return (repo / effect).exists() == (effect == "escaped")


@pytest.mark.parametrize(("rule", "args", "effect"), [UNSANDBOXED, RM], ids=["unsandboxed", "rm"])
def test_an_allow_rule_a_pull_adds_applies_only_once_approved(
    repo: Path, rule: str, args: dict[str, Any], effect: str
) -> None:
    (repo / "victim").write_text("keep me\n")
    shared = repo / ".codecoder" / "config.toml"
    write(shared, f'[permissions]\nallow = ["{rule}"]\n')  # what `git pull` brought
    replies = [[call("run_command", **args)], ["done"]]
    first = Run(repo, replies)
    assert first.status() == "denied" and not ran(repo, effect)
    (notice,) = first.held_back()
    assert "(not approved yet)" in notice and rule in notice and "codecoder trust" in notice
    trusted = codecoder("trust", str(repo))
    assert f"    {rule}\n" in trusted.stdout
    second = Run(repo, replies)
    assert second.status() == "success" and ran(repo, effect)
    assert second.held_back() == []
    (repo / "escaped").unlink(missing_ok=True)
    (repo / "victim").write_text("keep me\n")
    write(shared, f'[permissions]\nallow = ["{rule}", "run_command(git status)"]\n')
    third = Run(repo, replies)
    assert third.status() == "denied" and not ran(repo, effect)
    (notice,) = third.held_back()
    assert "(changed since you approved them)" in notice


def test_an_allow_rule_a_command_writes_into_the_local_file_applies_only_once_approved(
    repo: Path,
) -> None:
    (repo / "victim").write_text("keep me\n")
    (repo / "p.py").write_text(
        "import pathlib\n"
        "local = pathlib.Path('.codecoder/config.local.toml')\n"
        "local.parent.mkdir(exist_ok=True)\n"
        "local.write_text('[permissions]\\nallow = [\"run_command(rm:*)\"]\\n')\n"
    )
    wrote = Run(repo, [[call("run_command", command="python3 p.py")], ["done"]],
                "--approval", "full-auto", "--sandbox", "off")  # fmt: skip
    assert wrote.status() == "success" and (repo / ".codecoder" / "config.local.toml").exists()
    replies = [[call("run_command", command="rm victim")], ["done"]]
    held = Run(repo, replies)
    assert held.status() == "denied" and (repo / "victim").exists()
    (notice,) = held.held_back()
    assert "run_command(rm:*)" in notice
    assert codecoder("trust", str(repo)).returncode == 0
    assert Run(repo, replies).status() == "success" and not (repo / "victim").exists()


def answered(repo: Path, command: str) -> Run:
    """A session where the user answers "always, this project" to `command`."""
    reply = {"type": "reply", "request_id": "req_1", "decision": "allow_project"}
    replies = [[call("run_command", command=command)], ["done"]]
    return Run(repo, replies, "--stdin-replies", "--approval", "ask", input=json.dumps(reply))


def test_a_rule_the_user_adds_by_answering_applies_in_the_next_session(repo: Path) -> None:
    (repo / "victim").write_text("keep me\n")
    first = answered(repo, "rm victim")
    assert first.of("confirm_request") and first.status() == "success"
    local = (repo / ".codecoder" / "config.local.toml").read_text()
    assert "run_command(rm victim)" in local
    (repo / "victim").write_text("keep me\n")
    second = Run(repo, [[call("run_command", command="rm victim")], ["done"]])
    assert second.status() == "success" and not (repo / "victim").exists()
    assert second.held_back() == []


def test_an_answer_does_not_approve_a_rule_someone_else_planted_beside_it(repo: Path) -> None:
    write(repo / ".codecoder" / "config.local.toml", '[permissions]\nallow = ["unsandboxed"]\n')
    (repo / "victim").write_text("keep me\n")
    assert answered(repo, "rm victim").status() == "success"
    (repo / "victim").write_text("keep me\n")
    replies = [[call("run_command", command="touch escaped", sandbox=False)], ["done"]]
    held = Run(repo, replies)
    assert held.status() == "denied" and not (repo / "escaped").exists()
    (notice,) = held.held_back()
    assert "unsandboxed" in notice and "run_command(rm victim)" in notice


@pytest.mark.parametrize(("verdict", "asked"), [("deny", False), ("ask", True)])
def test_a_projects_deny_and_ask_rules_apply_unapproved(
    repo: Path, tmp_path: Path, verdict: str, asked: bool
) -> None:
    rules = f'[permissions]\n{verdict} = ["run_command(touch:*)"]\n'
    write(repo / ".codecoder" / "config.toml", rules)
    replies = [[call("run_command", command="touch made")], ["done"]]
    plain = tmp_path / "plain"
    plain.mkdir()
    full_auto = ("--approval", "full-auto", "--sandbox", "off")
    assert Run(plain, replies, *full_auto).status() == "success"  # no rule: full-auto runs it
    run = Run(repo, replies, *full_auto)
    assert run.status() == "denied" and not (repo / "made").exists()
    assert bool(run.of("confirm_request")) is asked
    assert run.held_back() == []


def test_the_approval_is_of_the_set_not_of_its_files_or_order(tmp_path: Path) -> None:
    from codecoder.permissions import RulePolicy

    from .helpers import run, trust_folder, write_project_rules

    write_project_rules(tmp_path, {"allow": ["run_command(make)", "run_command(ls)"]})
    trust_folder(tmp_path)
    write_project_rules(tmp_path, {"allow": ["run_command(ls)"]})
    write_project_rules(tmp_path, {"allow": ["run_command(make)"] * 2}, local=True)
    policy = RulePolicy.load(tmp_path, "never-ask")
    assert policy.held_back is None and policy.decide(*run("make")).verdict == "allow"
    write_project_rules(tmp_path, {"allow": ["run_command(make:*)"]}, local=True)
    policy = RulePolicy.load(tmp_path, "never-ask")
    assert policy.held_back is not None and policy.decide(*run("make")).verdict == "deny"


@pytest.mark.parametrize("kind", ["deny", "ask"])
def test_removing_a_deny_or_ask_rule_beside_an_approved_allow_set_needs_approval(
    tmp_path: Path, kind: str
) -> None:
    """`allow = ["run_command"]` was approved with `deny = ["run_command(touch:*)"]`
    beside it: deleting the deny rule widens what the allow set lets through, so the set
    is held back until approved again; adding one changes nothing."""
    from codecoder.permissions import RulePolicy

    from .helpers import run, trust_folder, write_project_rules

    narrow = {"allow": ["run_command"], kind: ["run_command(touch:*)"]}
    write_project_rules(tmp_path, narrow)
    trust_folder(tmp_path)
    policy = RulePolicy.load(tmp_path, "never-ask")
    assert policy.held_back is None and policy.decide(*run("touch a")).verdict == "deny"
    write_project_rules(tmp_path, {**narrow, kind: [*narrow[kind], "run_command(rm:*)"]})
    policy = RulePolicy.load(tmp_path, "never-ask")  # one more: still the approved set
    assert policy.held_back is None and policy.decide(*run("ls")).verdict == "allow"
    write_project_rules(tmp_path, {"allow": ["run_command"]})
    policy = RulePolicy.load(tmp_path, "never-ask")
    assert policy.held_back is not None and policy.decide(*run("touch a")).verdict == "deny"


def test_an_approvals_file_in_the_earlier_format_still_approves_its_rules() -> None:
    """A `rule-approvals.json` as written before the approval stores were shared
    (approval_store.py): the user's approvals stay valid."""
    from codecoder.permissions.rules import RuleSet, parse_table
    from codecoder.permissions.trust import Approvals, approvals_file

    approvals_file().parent.mkdir(parents=True)
    approvals_file().write_text(
        '{\n  "entries": [\n    {\n      "workspace": "/home/me/projét",\n'
        '      "digest": "686433f518607d45cd85db84612680e522efa7684c1be8450319c31430ac06ba",\n'
        '      "allow": [\n        "bash(make *)",\n        "read_file"\n      ]\n    }\n  ]\n}'
    )
    workspace, source = "/home/me/projét", "/home/me/projét/.codecoder/config.toml"
    same = RuleSet(allow=parse_table({"allow": ["read_file", "bash(make *)"]}, source).allow)
    rules = {"allow": ["bash(make *)", "read_file", "unsandboxed"]}
    more = RuleSet(allow=parse_table(rules, source).allow)
    approved = Approvals.load()
    assert approved.has(workspace, same)
    assert not approved.has(workspace, more) and approved.known(workspace)
