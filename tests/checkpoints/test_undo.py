"""Undo and redo (issue 18, items 3-4): real turns through `codecoder exec`, real git for
the snapshots, the real session store, and `codecoder undo` as users run it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from codecoder.sessions import SessionStore
from tests.checkpoints.helpers import CLI, call, tree, turn, undo

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "edited.txt").write_text("one\ntwo\nthree\n")
    (folder / "deleted.txt").write_text("keep me\n")
    (folder / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (folder / "tool.sh").chmod(0o755)
    (folder / ".gitignore").write_text("*.log\nbuild/\n")
    (folder / "app.log").write_text("log line\n")
    return folder


def test_undo_restores_edited_created_and_deleted_files_and_redo_puts_them_back(
    workspace: Path,
) -> None:
    before = tree(workspace)
    turn(
        workspace,
        call("edit_file", path="edited.txt", old_text="two", new_text="TWO"),
        call("write_file", path="src/created.py", content="print('new')\n"),
        call("run_command", command="rm deleted.txt && chmod -x tool.sh"),
    )
    after = tree(workspace)
    assert after != before and "src/created.py" in after and "deleted.txt" not in after
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert tree(workspace) == before
    assert os.access(workspace / "tool.sh", os.X_OK)
    assert "-TWO\n+two\n" in done.stdout  # the diff of what was restored
    assert "--- a/src/created.py\n+++ /dev/null\n" in done.stdout
    assert "--- /dev/null\n+++ b/deleted.txt\n" in done.stdout
    assert "undid turn 1" in done.stderr and "deleted.txt (recreated)" in done.stderr
    redone = undo(workspace, "--redo")
    assert redone.returncode == 0, redone.stderr
    assert tree(workspace) == after
    assert not os.access(workspace / "tool.sh", os.X_OK)
    again = undo(workspace)  # an undo of the redo
    assert again.returncode == 0 and tree(workspace) == before


def test_a_command_that_rewrites_files_is_undone_and_ignored_files_are_left(
    workspace: Path,
) -> None:
    for n in range(5):
        (workspace / "pkg").mkdir(exist_ok=True)
        (workspace / "pkg" / f"m{n}.py").write_text(f"value = {n}\n")
    (workspace / "rewrite.sh").write_text(
        "sed -i 's/value/VALUE/' pkg/*.py && mv pkg/m4.py pkg/renamed.py && "
        "mkdir -p out && echo made > out/new.txt && echo more >> app.log\n"
    )  # a script: what it writes is the parser's blind spot, not the snapshot's
    before = tree(workspace)
    turn(workspace, call("run_command", command="sh rewrite.sh"))
    assert (workspace / "pkg" / "m0.py").read_text() == "VALUE = 0\n"
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    restored = tree(workspace)
    assert restored.pop("app.log") == b"log line\nmore\n"  # ignored: not snapshotted
    before.pop("app.log")
    assert restored == before


def test_undo_refuses_when_a_file_changed_since_and_names_it(workspace: Path) -> None:
    turn(
        workspace,
        call("write_file", path="a.txt", content="agent's\n"),
        call("write_file", path="b.txt", content="agent's b\n"),
    )
    (workspace / "a.txt").write_text("mine now\n")  # the user edits after the turn
    refused = undo(workspace)
    assert refused.returncode == 1
    assert "a.txt: changed since the turn" in refused.stderr
    assert "b.txt" not in refused.stderr
    assert (workspace / "a.txt").read_text() == "mine now\n"
    assert (workspace / "b.txt").read_text() == "agent's b\n"  # nothing half done
    as_json = undo(workspace, "--json")
    line = json.loads(as_json.stdout)
    assert line["type"] == "undo" and line["done"] is False
    assert line["conflicts"] == [
        {"path": "a.txt", "why": "changed since the turn", "kind": "changed"}
    ]
    forced = undo(workspace, "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()


def test_redo_refuses_when_a_file_changed_since_the_undo(workspace: Path) -> None:
    turn(workspace, call("write_file", path="a.txt", content="agent's\n"))
    assert undo(workspace).returncode == 0
    (workspace / "a.txt").write_text("user wrote this after the undo\n")
    refused = undo(workspace, "--redo")
    assert refused.returncode == 1 and "a.txt: created since the undo" in refused.stderr
    assert (workspace / "a.txt").read_text() == "user wrote this after the undo\n"


def test_the_default_is_the_last_turn_that_changed_files_and_a_turn_that_changed_none_keeps_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    session = turn(workspace, call("write_file", path="first.txt", content="1\n"))
    turn(workspace, call("write_file", path="second.txt", content="2\n"))
    objects = Path(os.environ["XDG_DATA_HOME"]) / "codecoder" / "checkpoints"
    count = sum(1 for _ in objects.rglob("*"))
    turn(
        workspace,
        call("read_file", path="first.txt"),
        call("run_command", command="cat second.txt && ls"),
        call("edit_file", path="first.txt", old_text="1", new_text="1"),  # refused: same text
        strict=False,
    )
    with SessionStore() as store:
        rows = store.checkpoints(session_id=session)
    assert sorted(row.turn for row in rows) == [1, 2]  # turn 3 changed nothing: no row
    # the third turn's command took two snapshots of an unchanged tree: no object added
    assert not [p for p in objects.rglob("*") if "objects/" in p.as_posix()][count:]
    done = undo(workspace)
    assert done.returncode == 0 and "turn 2" in done.stderr
    assert not (workspace / "second.txt").exists() and (workspace / "first.txt").exists()
    done = undo(workspace)
    assert done.returncode == 0 and "turn 1" in done.stderr
    nothing = undo(workspace)
    assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr


def test_an_older_turn_is_refused_while_a_later_turn_changed_its_file(workspace: Path) -> None:
    turn(workspace, call("write_file", path="a.txt", content="v1\n"))
    turn(workspace, call("edit_file", path="a.txt", old_text="v1", new_text="v2"))
    refused = undo(workspace, "--turn", "1")
    assert refused.returncode == 1 and "a.txt: changed since the turn" in refused.stderr
    assert undo(workspace).returncode == 0  # turn 2
    assert (workspace / "a.txt").read_text() == "v1\n"
    assert undo(workspace, "--turn", "1").returncode == 0
    assert not (workspace / "a.txt").exists()
    missing = undo(workspace, "--turn", "7")
    assert missing.returncode == 2 and "turn 7" in missing.stderr


def test_with_history_forks_the_conversation_before_the_turn(workspace: Path) -> None:
    session = turn(workspace, call("write_file", path="a.txt", content="A\n"), task="make a")
    turn(workspace, call("write_file", path="b.txt", content="B\n"), task="make b")
    done = undo(workspace, "--with-history")
    assert done.returncode == 0, done.stderr
    with SessionStore() as store:
        latest = store.latest_for(workspace)
        assert latest is not None and latest.id != session and latest.parent_id == session
        users = [m.text for m in store.load_messages(latest.id) if m.role == "user"]
    assert users == ["make a"]  # the conversation before turn 2
    assert f"codecoder resume {latest.id[:8]}" in done.stderr
    follow = turn(workspace, task="go on")  # --continue takes the fork
    assert follow == latest.id


def test_symlinks_are_restored_and_a_symlinked_folder_is_never_written_through(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to("edited.txt")
    turn(
        workspace,
        call("run_command", command="rm link && ln -s deleted.txt link && mkdir sub && "
             "echo x > sub/f.txt"),
    )  # fmt: skip
    assert undo(workspace).returncode == 0
    assert os.readlink(workspace / "link") == "edited.txt" and not (workspace / "sub").exists()
    assert undo(workspace, "--redo").returncode == 0
    # now make `sub` a symlink to a folder outside: an undo must not delete through it
    (workspace / "sub" / "f.txt").unlink()
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside, target_is_directory=True)
    (outside / "f.txt").write_text("x\n")
    refused = undo(workspace)
    assert refused.returncode == 1 and "sub is now a symlink" in refused.stderr
    assert (outside / "f.txt").read_text() == "x\n"


def test_undo_outside_a_session_or_folder_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = undo(empty)
    assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr
    missing = subprocess.run(
        [*CLI, "undo", "-C", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_a_sub_agents_command_is_kept_with_the_turn_that_started_it(
    workspace: Path, tmp_path: Path
) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "codecoder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[subagents]\nrun_command = true\n")
    (workspace / "fix.sh").write_text("echo patched >> edited.txt\n")
    script = tmp_path / "sub-script.json"
    script.write_text(
        json.dumps(
            {
                "format": "codecoder-script/1",
                "replies": [[call("agent", tasks=[{"task": "patch it"}])], ["done"]],
                "subagents": [
                    {
                        "match": "patch",
                        "replies": [[call("run_command", command="sh fix.sh")], ["patched"]],
                    }
                ],
            }
        )
    )
    result = subprocess.run(
        [*CLI, "exec", "--json", "--approval", "full-auto", "--sandbox", "off", "--script",
         str(script), "-C", str(workspace), "go"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (workspace / "edited.txt").read_text().endswith("patched\n")
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "edited.txt").read_text() == "one\ntwo\nthree\n"


def test_without_git_file_tools_keep_checkpoints_and_commands_say_they_cannot(
    workspace: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"  # every program of PATH but git
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else ():
            target = bin_dir / program.name
            if program.name != "git" and not target.exists() and os.access(program, os.X_OK):
                target.symlink_to(program)
    script = tmp_path / "nogit.json"
    script.write_text(
        json.dumps(
            [
                [
                    call("write_file", path="a.txt", content="A\n"),
                    call("run_command", command="rm deleted.txt"),
                ],
                ["done"],
            ]
        )
    )
    env = {**os.environ, "PATH": str(bin_dir)}
    result = subprocess.run(
        [*CLI, "exec", "--json", "--approval", "full-auto", "--sandbox", "off", "--script",
         str(script), "-C", str(workspace), "go"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    statuses = [x["detail"] for x in lines if x["type"] == "status_update"]
    assert any("no checkpoint of this command (git is not installed" in s for s in statuses)
    assert [x["status"] for x in lines if x["type"] == "tool_finished"] == ["success", "success"]
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "a.txt").exists()  # the file tool's change was kept
    assert not (workspace / "deleted.txt").exists()  # the command's was not


def test_a_folder_the_turn_replaced_by_a_symlink_is_restored_and_the_link_never_followed(
    workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("not ours\n")
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("ours\n")
    (workspace / "d" / "g.txt").write_text("g\n")
    before = tree(workspace)
    replace = "import os, shutil; shutil.rmtree('d'); os.symlink('../elsewhere', 'd')"
    turn(workspace, call("run_command", command=f'python3 -c "{replace}"'))  # rm -rf, ln -s
    after = tree(workspace)
    done = undo(workspace)
    assert done.returncode == 0, done.stderr
    assert tree(workspace) == before and not (workspace / "d").is_symlink()
    assert (elsewhere / "f.txt").read_text() == "not ours\n"  # never written through
    assert sorted(p.name for p in elsewhere.iterdir()) == ["f.txt"]
    redone = undo(workspace, "--redo")
    assert redone.returncode == 0, redone.stderr
    assert tree(workspace) == after and os.readlink(workspace / "d") == "../elsewhere"
    assert (elsewhere / "f.txt").read_text() == "not ours\n"
    assert undo(workspace).returncode == 0 and tree(workspace) == before


def test_a_damaged_store_is_said_and_force_is_not_suggested(workspace: Path) -> None:
    turn(workspace, call("run_command", command="echo changed > edited.txt"))
    with SessionStore() as store:
        (row,) = store.checkpoints(workspace=workspace)
    for blob in Path(row.store, "objects").glob("??/*"):
        blob.unlink()  # every object, the turn's "before" too
    for pack in Path(row.store, "objects", "pack").glob("*"):
        pack.unlink()
    for args in ((), ("--force",)):
        refused = undo(workspace, *args)
        assert refused.returncode == 1
        assert "checkpoint store cannot give these files back" in refused.stderr
        assert "changed since" not in refused.stderr and "--force" not in refused.stderr
        assert "edited.txt: the checkpoint store has no object" in refused.stderr
    assert (workspace / "edited.txt").read_text() == "changed\n"
