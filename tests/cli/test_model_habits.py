"""`codecoder exec` with a scripted model that calls tools the way models trained on other
agents do: what the model gets back, and that no alias or list lets a call past a
permission rule that would stop it written our way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codecoder.sandbox.probe import probe

CLI = [sys.executable, "-m", "codecoder"]


def exec_script(workspace: Path, replies: list[Any], *flags: str) -> list[dict[str, Any]]:
    """The tool_finished events of a run of `replies`, with `flags` (default never-ask)."""
    script = workspace.parent / "script.json"
    script.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    result = subprocess.run(
        [*CLI, "exec", "--json", "--script", str(script), "-C", str(workspace), *flags, "go"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return [event for event in events if event["type"] == "tool_finished"]


def call(name: str, **args: Any) -> list[Any]:
    return [{"type": "tool_call", "name": name, "args": args}]


def said(finished: dict[str, Any]) -> str:
    if finished["error"] is not None:
        return f"{finished['error']['kind']}: {finished['error']['message']}"
    return finished["content"]


def test_a_list_command_is_judged_as_the_line_it_runs(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "keep").mkdir(parents=True)
    replies = [
        call("run_command", command=["echo", "a; rm -rf keep"]),
        call("run_command", command=["rm", "-rf", "keep"]),
        call("run_command", command=["bash", "-c", "rm -rf keep"]),
        call("run_command", cmd="rm -rf keep"),
        ["done"],
    ]
    echoed, removed, wrapped, renamed = exec_script(workspace, replies)
    assert said(echoed) == "a; rm -rf keep\n[exit code 0]"
    for denied in (removed, wrapped, renamed):
        assert denied["error"]["kind"] == "denied", said(denied)
        assert "rm -rf keep" in denied["error"]["message"]
    assert (workspace / "keep").is_dir()


def test_an_aliased_path_is_judged_as_the_path(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "m.py").write_text("a = 1\n")
    outside = tmp_path / "outside.py"
    outside.write_text("a = 1\n")
    replies = [
        call("edit_file", file_path="m.py", old_string="a = 1", new_string="a = 2"),
        call("edit_file", file_path=str(outside), old_string="a = 1", new_string="a = 2"),
        call("write_file", filePath=str(outside), content="pwned\n"),
        ["done"],
    ]
    inside, *elsewhere = exec_script(workspace, replies, "--approval", "full-auto")
    assert said(inside) == "Edited m.py: 1 replacement (line 1)."
    assert (workspace / "m.py").read_text() == "a = 2\n"
    for denied in elsewhere:  # full-auto asks for a write outside; headless, none answers
        assert denied["error"]["kind"] == "denied", said(denied)
    assert outside.read_text() == "a = 1\n"


def test_a_malformed_call_is_taught_its_parameters_not_denied(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = [call("write_file", file_pth="new.txt", content="x"), ["done"]]
    (finished,) = exec_script(workspace, replies, "--approval", "auto-edit")
    assert said(finished) == (
        "invalid_args: invalid arguments for write_file: unknown field `file_pth` (did you "
        "mean `path`?)\n"
        "write_file takes:\n"
        "  path: string (required)\n"
        "  content: string (required)"
    )


def test_numbers_as_text_and_other_checklists_cost_no_round(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "n.txt").write_text("one\ntwo\nthree\n")
    todos = [{"content": "Read n.txt", "status": "completed", "activeForm": "Reading"}]
    replies = [
        call("read_file", file_path="n.txt", offset="2", limit="1"),
        call("todo_write", todos=todos),
        ["done"],
    ]
    read, checklist = exec_script(workspace, replies)
    assert said(read) == "     2\ttwo\n[lines 2-2 of 3 (14 bytes); read on with offset=3]"
    assert said(checklist) == "Checklist updated (1 of 1 done):\n[x] Read n.txt"


def test_an_unread_file_is_not_overwritten(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("the user's notes\n")
    replies = [
        call("write_file", path="notes.md", content="# Notes\n"),
        call("read_file", path="notes.md"),
        call("write_file", path="notes.md", content="# Notes\n"),
        ["done"],
    ]
    refused, _, written = exec_script(workspace, replies, "--approval", "full-auto")
    assert said(refused).startswith("notes.md exists (17 bytes) and this session has not read")
    assert said(written) == "Overwrote notes.md (8 bytes, 1 line; was 17 bytes)."
    assert (workspace / "notes.md").read_text() == "# Notes\n"


@pytest.mark.parametrize("value", [0, "false", "0", 0.0, "no", None, []])
def test_no_spelling_of_sandbox_false_runs_a_command_unconfined_unasked(
    tmp_path: Path, value: Any
) -> None:
    """Whatever the check makes of a `sandbox` value (0 and "false" read as False, others
    refused), the policy judges what the tool will read: before, `0 == False` kept the
    model's 0, which the policy did not take for an escalation and the tool ran
    unconfined, unasked, in full-auto."""
    if not probe().works:
        pytest.skip(f"bubblewrap cannot run here: {probe().detail}")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "escaped"
    command = f"python3 -c \"open('{outside}', 'w')\""  # a write no parser sees: the sandbox's
    replies = [call("run_command", command=command, sandbox=value), ["done"]]
    (finished,) = exec_script(workspace, replies, "--approval", "full-auto")
    assert not outside.exists(), said(finished)
    if value is not None:  # None counts as not given: confined, so the write fails
        assert finished["status"] == "error", said(finished)


def test_sandbox_false_without_a_sandbox_is_an_ordinary_command(tmp_path: Path) -> None:
    """With `--sandbox off` the schema offers no `sandbox`; a model that sends it anyway
    (it knows the field from another session) runs its command as any other. Before,
    the check took it and the policy saw an escalation: a plain `ls` was refused in
    auto-edit, "only the user can allow that", with nobody to ask."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "here.txt").write_text("x")
    replies = [call("run_command", command="ls", sandbox=False), ["done"]]
    (listed,) = exec_script(workspace, replies, "--sandbox", "off", "--approval", "auto-edit")
    assert said(listed) == "here.txt\n[exit code 0]"
