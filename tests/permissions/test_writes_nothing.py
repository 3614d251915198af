"""Which command lines write nothing (permissions/writes.py): those the sandbox runs
read-only in a workspace-write session, without a checkpoint. Every way a line can
write must answer False: a redirection, a program off the read-only list however it is
reached (substitution, pipe into a shell, wrapper, an option that writes), a word only
known at run time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codecoder.permissions.writes import writes_nothing

READS = [
    "echo round 1",
    "ls -la",
    "cat README.md | grep hello | wc -l",
    "git status",
    "git diff HEAD~1 -- src",
    "git log --oneline -5",
    "ls 2>/dev/null",
    "ls >/dev/null 2>&1",
    "echo hi >> /dev/null",
    "echo to-stderr >&2",
    "cat < README.md",
    "cat <<EOF\nhi\nEOF",
    "timeout 5 ls",
    "sleep 1 &",
    "find . -name '*.py'",
    "sed -n 1,5p README.md",
    "cd sub && ls",
]

WRITES = [
    "echo x > made.txt",  # redirections into a file
    "echo x >> README.md",
    "ls &> out.log",
    "ls 2> err.log",
    "cat <<EOF > f\nhi\nEOF",
    "echo x > $TARGET",  # a target only known at run time
    "echo x > ~/f",
    "touch x",  # programs off the list
    "mkdir d",
    'python3 -c \'open("f", "w")\'',
    "./ls",  # a program of the workspace named like one on the list
    "ls | tee copy",
    "echo rm x | sh",
    "echo x | bash",
    "ls | xargs rm",
    "echo $(rm -rf sub)",  # inside a substitution
    "echo `touch x`",
    "cat <(touch x)",
    "ls; touch x",
    "ls && rm README.md",
    "ls || git commit -am x",
    "timeout 5 rm README.md",  # wrappers carry what they run
    "command rm README.md",
    "nice -n 5 touch x",
    "env X=1 ls",
    "X=1 ls",  # an assignment may change what the program does (GIT_DIR=…)
    "find . -delete",  # options that write
    "find . -exec rm {} ;",
    "find . -fprint out",
    "sort -o out README.md",
    "sed -i s/a/b/ README.md",
    "sed 'w out' README.md",
    "git commit -m x",
    "git checkout -- README.md",
    "git -c core.pager=touch log",
    "date -s 2020-01-01",
    "eval ls",
    "exec ls > f",
    "",
    "ls\u200b",  # a line the parser will not vouch for
    "sort -S 1K -T . README.md",  # its temporary files go into the workspace
    # whether something is writable: the read-only mount would change the answer
    "test -w README.md && echo yes",
    "[ -w README.md ] && echo yes",
    "[[ -w README.md ]] && echo yes",
    "echo x; [ -w sub ]",
    "find . -writable",
    "find . -name x -writable -print",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "README.md").write_text("hello\n")
    return tmp_path


@pytest.mark.parametrize("command", READS)
def test_lines_of_read_only_programs_write_nothing(workspace: Path, command: str) -> None:
    assert writes_nothing(command, workspace)


@pytest.mark.parametrize("command", WRITES)
def test_every_way_of_writing_is_seen(workspace: Path, command: str) -> None:
    assert not writes_nothing(command, workspace)


def test_a_redirection_counts_by_its_word_not_by_where_a_link_leads(workspace: Path) -> None:
    """Only the literal /dev/null is the discard: a link named like it that leads into
    the workspace is a write, and so is a link that leads to /dev/null (the answer
    never depends on the disk)."""
    os.symlink(workspace / "README.md", workspace / "null")
    os.symlink("/dev/null", workspace / "bin")
    assert not writes_nothing("ls > null", workspace)
    assert not writes_nothing("ls > bin", workspace)
    assert not writes_nothing("ls > /dev/../dev/null", workspace)
    assert writes_nothing("ls > /dev/null", workspace)
