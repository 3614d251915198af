"""Building blocks of the batch tests: real git repositories, scripts, tasks files, the
ten tasks of the issue, and a look at /proc for what a task left running."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from codecoder.batch.runner import MARKER_VAR
from tests.procfs import alive, environ_value, pids, read

CLI = [sys.executable, "-m", "codecoder"]
GIT_ID = ["-c", "user.email=t@example.com", "-c", "user.name=T"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_ID, *args], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """A repository with one commit of `files` (default: a README and a small module)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, content in (files or {"README.md": "# demo\n", "app.py": "X = 1\n"}).items():
        file = path / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(content if isinstance(content, bytes) else content.encode())
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def write_script(folder: Path, name: str, replies: list[Any]) -> str:
    (folder / name).write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return name


def write_tasks(folder: Path, tasks: list[dict[str, Any]], name: str = "tasks.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """The last line of each id; every line must be a whole JSON object."""
    found: dict[str, dict[str, Any]] = {}
    data = path.read_text()
    assert data.endswith("\n"), "the results file ends in a cut-off line"
    for line in data.splitlines():
        result = json.loads(line)
        found[result["id"]] = result
    return found


def run_batch(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "batch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def task_processes() -> set[int]:
    """Processes that carry any batch task's marker (the tasks' commands and their trees)."""
    return {pid for pid in pids() if environ_value(pid, MARKER_VAR) is not None and alive(pid)}


def tasks_sleeping() -> set[str]:
    """The tasks (by marker) that have a `sleep` command running: past their clone and
    the start of exec, inside their first command."""
    found: set[str] = set()
    for pid in task_processes():
        command = read(pid, "cmdline").split(b"\0")[0]
        marker = environ_value(pid, MARKER_VAR)  # None once it ended since the scan
        if command.endswith(b"sleep") and marker is not None:
            found.add(marker)
    return found


def ten_tasks(folder: Path) -> tuple[Path, dict[str, str]]:
    """The issue's ten tasks: some pass, some fail a gate, one times out, one has a bad
    repository path; with the status each must end with."""
    repo = make_repo(folder / "repo", {"README.md": "# demo\n", "app.py": "X = 1\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "feature.txt").write_text("only on the feature branch\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature")
    git(repo, "checkout", "-q", "main")
    (repo / "uncommitted.txt").write_text("not in any clone\n")
    s = write_script
    full = "full-auto"
    plan_ok = folder / "ok.toml"
    plan_ok.write_text(
        'max_attempts = 1\n[[milestones]]\nname = "note"\ntask = "write note.txt"\n'
        'gates = ["test -f note.txt", "grep -q done note.txt"]\n'
    )
    plan_bad = folder / "bad.toml"
    plan_bad.write_text(
        'max_attempts = 1\n[[milestones]]\nname = "note"\ntask = "write note.txt"\n'
        'gates = ["test -f note.txt", "grep -q never note.txt"]\n'
    )
    write_note = [[call("write_file", path="note.txt", content="done\n")], ["Written."]]
    tasks: list[dict[str, Any]] = [
        {"id": "new-file", "repo": "repo", "task": "add a file", "approval": full,
         "script": s(folder, "new.json", [[call("write_file", path="new.txt", content="hi\n")],
                                          [{"type": "usage", "input_tokens": 100,
                                            "output_tokens": 7}, "Added."]])},
        {"id": "edit", "repo": "repo", "task": "edit app.py", "approval": full,
         "script": s(folder, "edit.json", [[call("edit_file", path="app.py", old_text="X = 1",
                                                 new_text="X = 2")], ["Edited."]])},
        {"id": "delete", "repo": "repo", "task": "remove README", "approval": full,
         "sandbox": "off",
         "script": s(folder, "rm.json", [[call("run_command", command="rm README.md")],
                                         ["Removed."]])},
        {"id": "answer-only", "repo": "repo", "task": "explain", "script": s(
            folder, "answer.json", [["It is a demo."]])},
        {"id": "on-branch", "repo": "repo", "ref": "feature", "task": "read", "script": s(
            folder, "branch.json", [[call("read_file", path="feature.txt")], ["Read."]])},
        {"id": "exhausted", "repo": "repo", "task": "loop", "script": s(
            folder, "short.json", [[call("list_dir")]])},
        {"id": "plan-pass", "repo": "repo", "plan": "ok.toml", "approval": full,
         "script": s(folder, "note.json", write_note)},
        {"id": "plan-fail", "repo": "repo", "plan": "bad.toml", "approval": full,
         "script": "note.json"},
        {"id": "slow", "repo": "repo", "task": "wait", "approval": full, "sandbox": "off",
         "timeout": 3, "script": s(folder, "slow.json", [
             [call("run_command", command="sleep 300 & sleep 301; echo never")], ["Never."]])},
        {"id": "bad-repo", "repo": "no-such-repo", "task": "anything", "script": "answer.json"},
    ]  # fmt: skip
    expected = {
        "new-file": "passed",
        "edit": "passed",
        "delete": "passed",
        "answer-only": "passed",
        "on-branch": "passed",
        "exhausted": "failed",
        "plan-pass": "passed",
        "plan-fail": "failed",
        "slow": "timeout",
        "bad-repo": "error",
    }
    return write_tasks(folder, tasks), expected


def check_ten(results: dict[str, dict[str, Any]], expected: dict[str, str]) -> None:
    """What the ten tasks' result lines must say, whichever runner ran them."""
    assert {id: r["status"] for id, r in results.items()} == expected
    new = results["new-file"]
    assert "new file mode" in new["diff"] and "+hi" in new["diff"]
    assert "uncommitted.txt" not in new["diff"], "the clone took the source's work tree"
    assert new["tokens"] == {"input": 100, "output": 7, "cached": 0, "reasoning": 0}
    assert new["exit_code"] == 0 and new["cost"] is None and "error" not in new
    assert "-X = 1\n+X = 2" in results["edit"]["diff"]
    assert "deleted file mode" in results["delete"]["diff"]
    assert results["answer-only"]["diff"] == ""
    assert results["on-branch"]["diff"] == ""
    assert results["exhausted"]["exit_code"] == 1
    assert "script" in results["exhausted"]["error"]
    passed, failed = results["plan-pass"], results["plan-fail"]
    assert [(g["command"], g["exit_code"]) for g in passed["gates"]] == [
        ("test -f note.txt", 0),
        ("grep -q done note.txt", 0),
    ]
    assert [(g["command"], g["exit_code"]) for g in failed["gates"]] == [
        ("test -f note.txt", 0),
        ("grep -q never note.txt", 1),
    ]
    assert "+done" in failed["diff"] and failed["exit_code"] == 1
    assert "gates" not in new
    slow = results["slow"]
    assert slow["exit_code"] == 143 and slow["error"] == "timed out after 3 s"
    assert 3 <= slow["duration_s"] < 3 + 15
    bad = results["bad-repo"]
    assert bad["exit_code"] is None and "no-such-repo" in bad["error"]
    assert "session_export" not in bad
    for id in expected.keys() - {"bad-repo"}:
        assert "session_export" in results[id], id
