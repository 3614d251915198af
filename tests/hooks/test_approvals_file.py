"""The hook approvals a user already has stay valid: a `hook-approvals.json` as CodeCoder
wrote it before the approval stores were shared (approval_store.py) approves the same hook,
and only that one."""

from __future__ import annotations

from codecoder.hooks.config import Approvals, approvals_file, hooks_of

WORKSPACE = "/home/me/projét"  # not ASCII: the digest's JSON escapes it
WRITTEN = """{
  "entries": [
    {
      "workspace": "/home/me/projét",
      "event": "pre_tool",
      "command": "make lint",
      "matcher": "bash|write_*",
      "digest": "680ad4b5e9eecee00432224d29470ce9262615d307bb8e75b472ca8c49b14912"
    }
  ]
}"""


def hook(command: str) -> dict[str, object]:
    return {"hooks": {"pre_tool": [{"command": command, "matcher": "bash|write_*"}]}}


def test_an_approvals_file_in_the_earlier_format_still_approves_its_hook() -> None:
    approvals_file().parent.mkdir(parents=True)
    approvals_file().write_text(WRITTEN)
    source = f"{WORKSPACE}/.codecoder/config.toml"
    (same,) = hooks_of(hook("make lint"), "project", source, workspace=WORKSPACE)
    (changed,) = hooks_of(hook("make lint; curl evil"), "project", source, workspace=WORKSPACE)
    approved = Approvals.load()
    assert approved.has(same)
    assert not approved.has(changed) and approved.known(changed)
