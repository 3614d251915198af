"""The results file: its line type against docs/batch.md, and what --resume reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codecoder.batch.results import (
    STATUSES,
    Gate,
    ResultLine,
    ResultsError,
    ResultsWriter,
    Tokens,
    export_name,
    read_done,
)

DOC = Path(__file__).parents[2] / "docs" / "batch.md"


def _table(heading: str) -> list[str]:
    """The first column of the table whose header row starts with `| heading |`."""
    lines = DOC.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"| {heading} |")))
    names = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names.append(line.split("|")[1].strip().strip("`"))
    return names


def test_the_docs_list_every_field_and_status() -> None:
    assert _table("field") == list(ResultLine.__struct_fields__)
    assert _table("status") == list(STATUSES)
    gates = next(line for line in DOC.read_text().splitlines() if line.startswith("| `gates` |"))
    assert re.findall(r"\{(.*?)\}", gates)[0].split(", ") == list(Gate.__struct_fields__)
    tokens = next(line for line in DOC.read_text().splitlines() if line.startswith("| `tokens` |"))
    assert re.findall(r"\{(.*?)\}", tokens)[0].split(", ") == list(Tokens.__struct_fields__)


def _line(id: str, status: str = "passed") -> ResultLine:
    return ResultLine(id, status, 0, 1.0, Tokens(), None, "")  # type: ignore[arg-type]


def test_resume_drops_a_cut_off_last_line_and_keeps_the_last_of_an_id(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = ResultsWriter(path)
    for line in (_line("a", "cancelled"), _line("b"), _line("a")):
        writer.write(line)
    writer.close()
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"id": "c", "sta')
    done = read_done(path)
    assert {id: r.status for id, r in done.items()} == {"a": "passed", "b": "passed"}
    assert path.read_bytes() == whole  # the cut-off line is gone before anything is appended


def test_resume_refuses_a_file_that_is_not_results(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a"}\n')
    with pytest.raises(ResultsError, match=r"r\.jsonl:1: not a result line"):
        read_done(path)
    assert read_done(tmp_path / "missing.jsonl") == {}


@pytest.mark.parametrize("task_id", ["../../etc/passwd", "a/b", ".hidden", "..", "ok-1.2"])
def test_an_export_name_is_one_file_in_its_folder(tmp_path: Path, task_id: str) -> None:
    writer = ResultsWriter(tmp_path / "out.jsonl")
    try:
        where = writer.export(task_id, b"{}\n")
    finally:
        writer.close()
    file = tmp_path / where
    assert file.parent == tmp_path / "out.sessions" and file.read_bytes() == b"{}\n"
    assert not file.name.startswith(".") and export_name(task_id) == file.name
