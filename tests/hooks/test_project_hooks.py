"""A repository's hooks (issue 18, item 7; CVE-2025-59536): an untrusted folder's never
run, a trusted folder's only once approved, and a hook changed or added since asks
again. Real `codecoder` processes: exec, trust, hooks list / approve."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.hooks.helpers import CLI, call, exec_json, of_type, toml, user_config

pytestmark = pytest.mark.timeout(120)


def codecoder(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def plant(
    workspace: Path, marker: Path, *, event: str = "session_start", name: str = "config.toml"
) -> None:
    """A repository's `.codecoder/` file with a hook that leaves `marker` if it runs."""
    folder = workspace / ".codecoder"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"[[hooks.{event}]]\ncommand = {toml(f'touch {marker}')}\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "cloned"
    folder.mkdir()
    return folder


def test_an_untrusted_folders_hooks_never_run(repo: Path, tmp_path: Path) -> None:
    markers = {
        event: tmp_path / f"ran-{event}"
        for event in ("session_start", "user_prompt", "pre_tool", "post_tool", "stop")
    }
    folder = repo / ".codecoder"
    folder.mkdir()
    (folder / "config.toml").write_text(
        "".join(f"[[hooks.{e}]]\ncommand = {toml(f'touch {m}')}\n" for e, m in markers.items())
    )
    (folder / "config.local.toml").write_text(
        f"[[hooks.user_prompt]]\ncommand = {toml(f'touch {tmp_path}/ran-local')}\n"
    )
    approved = codecoder("hooks", "approve", "-C", str(repo))  # approval alone is not trust
    assert approved.returncode == 0, approved.stderr
    replies = [[call("write_file", path="a.txt", content="A\n")], ["done"]]
    code, lines, err = exec_json(repo, replies)
    assert code == 0, err
    assert not any(m.exists() for m in markers.values()) and not (tmp_path / "ran-local").exists()
    assert not any(line["notice"] == "hook" for line in of_type(lines, "status_update"))
    listed = codecoder("hooks", "list", "-C", str(repo))
    assert "not run (folder not trusted: codecoder trust)" in listed.stdout


def test_a_trusted_folders_hook_runs_only_once_approved(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plant(repo, marker)
    assert codecoder("trust", str(repo)).returncode == 0
    code, lines, err = exec_json(repo, [["done"]])
    assert code == 0, err
    assert not marker.exists()
    notices = [
        line["detail"] for line in of_type(lines, "status_update") if line["notice"] == "hook"
    ]
    assert len(notices) == 1 and "project hook not run (new)" in notices[0]
    assert "codecoder hooks approve" in notices[0] and f"touch {marker}" in notices[0]
    assert "project hook not run (new)" in err  # said on stderr, where a person sees it
    approved = codecoder("hooks", "approve", "-C", str(repo))
    assert approved.returncode == 0 and f"session_start: touch {marker}" in approved.stdout
    code, lines, err = exec_json(repo, [["done"]])
    assert code == 0, err
    assert marker.exists()


def test_a_changed_or_added_project_hook_asks_again(repo: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    plant(repo, first)
    codecoder("trust", str(repo))
    codecoder("hooks", "approve", "-C", str(repo))
    plant(repo, second)  # the repository changes the approved hook (a `git pull`)
    code, lines, err = exec_json(repo, [["done"]])
    assert code == 0, err
    assert not first.exists() and not second.exists()
    notices = [
        line["detail"] for line in of_type(lines, "status_update") if line["notice"] == "hook"
    ]
    assert "changed or added since you approved its hooks" in notices[0]
    listed = codecoder("hooks", "list", "-C", str(repo))
    assert "changed or added since you approved its hooks" in listed.stdout
    codecoder("hooks", "approve", "-C", str(repo))
    plant(repo, first, event="stop", name="config.local.toml")  # one more, added later
    code, lines, err = exec_json(repo, [["done"]])
    assert code == 0, err
    assert second.exists() and not first.exists()  # the approved one ran, the added did not


def test_a_project_hook_approved_in_one_folder_does_not_run_in_a_copy(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    plant(repo, marker)
    codecoder("trust", str(repo))
    codecoder("hooks", "approve", "-C", str(repo))
    copy = tmp_path / "copy"
    copy.mkdir()
    plant(copy, marker)
    codecoder("trust", str(copy))
    code, _, err = exec_json(copy, [["done"]])
    assert code == 0, err
    assert not marker.exists()


def test_user_hooks_run_in_an_untrusted_folder(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "mine"
    user_config(f"[[hooks.session_start]]\ncommand = {toml(f'touch {marker}')}\n")
    plant(repo, tmp_path / "theirs")
    code, _, err = exec_json(repo, [["done"]])
    assert code == 0, err
    assert marker.exists() and not (tmp_path / "theirs").exists()
    listed = codecoder("hooks", "list", "-C", str(repo))
    assert f"user     runs          session_start: touch {marker}" in listed.stdout
    assert json.dumps(str(marker))[1:-1] in listed.stdout
