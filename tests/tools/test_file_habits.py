"""What the file tools tell a model that makes the usual mistakes: reading a huge file,
overwriting what it never read, an old_text whose whitespace is off, other agents'
argument names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.ports import ToolContext, ToolFailure
from codecoder.tools.files import MAX_READ_BYTES, MAX_READ_LINES, EditFile, ReadFile, WriteFile
from codecoder.tools.ledger import ReadLedger

from .conftest import write


def run(tool: Any, ctx: ToolContext, **args: Any) -> tuple[str, str]:
    result = tool.run(args, ctx)
    return result.status, result.text


def session(max_files: int = 4096) -> tuple[ReadFile, WriteFile, EditFile]:
    reads = ReadLedger(max_files)
    return ReadFile(reads), WriteFile(reads), EditFile(reads)


# --- reads are bounded and say where they are ------------------------------------------


def test_a_read_of_a_big_log_is_bounded_and_says_how_many_lines_there_are(
    workspace: Path, ctx: ToolContext
) -> None:
    write(workspace, "app.log", "".join(f"event {n} ok\n" for n in range(1, 300_001)))
    status, text = run(ReadFile(), ctx, path="app.log", limit=100_000)
    lines = text.splitlines()
    assert status == "success" and len(lines) == MAX_READ_LINES + 1
    assert lines[-2] == f"{MAX_READ_LINES:>6}\tevent {MAX_READ_LINES} ok"
    assert lines[-1] == f"[lines 1-2000 of 300000 (4.5 MB); read on with offset={2001}]"
    text = run(ReadFile(), ctx, path="app.log", offset=299_999)[1]
    assert text.splitlines()[-1] == "[lines 299999-300000 of 300000 (4.5 MB)]"


def test_a_file_of_long_lines_stops_at_the_byte_cap(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "min.js", ("x" * 1900 + "\n") * 200)
    text = run(ReadFile(), ctx, path="min.js")[1]
    assert len(text.encode()) <= MAX_READ_BYTES + 100
    *rows, note = text.splitlines()
    assert note == (
        f"[lines 1-{len(rows)} of 200 (371.3 KB); 50 KB per read; "
        f"read on with offset={len(rows) + 1}]"
    )


# --- no overwrite of what was not read ---------------------------------------------------


def test_write_refuses_an_unread_file_and_says_why(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "notes.md", "keep me\n")
    read, write_file, edit = session()
    status, text = run(write_file, ctx, path="notes.md", content="new\n")
    assert status == "error"
    assert text == (
        "notes.md exists (8 bytes) and this session has not read it; read_file it first so "
        "nothing in it is lost unseen, or change part of it with edit_file"
    )
    assert path.read_text() == "keep me\n"
    run(read, ctx, path="notes.md", limit=1)  # any read counts
    assert run(write_file, ctx, path="notes.md", content="new\n")[0] == "success"
    assert path.read_text() == "new\n"
    # the session's own writes and edits keep it writable; an empty file loses nothing
    assert run(edit, ctx, path="notes.md", old_text="new", new_text="newer")[0] == "success"
    assert run(write_file, ctx, path="notes.md", content="x\n")[0] == "success"
    write(workspace, "empty.txt", "")
    assert run(write_file, ctx, path="empty.txt", content="y\n")[0] == "success"


def test_a_binary_file_read_file_refused_to_show_may_be_replaced(
    workspace: Path, ctx: ToolContext
) -> None:
    """read_file cannot show a binary file, so without this no write_file could ever
    replace one: being told what it is (binary, its size) counts as seen."""
    path = workspace / "logo.bin"
    path.write_bytes(b"\x00\x01png" * 100)
    read, write_file, _ = session()
    assert run(write_file, ctx, path="logo.bin", content="text now\n")[0] == "error"
    status, text = run(read, ctx, path="logo.bin")
    assert status == "error" and "(500 bytes)" in text and "binary" in text
    assert run(write_file, ctx, path="logo.bin", content="text now\n")[0] == "success"
    assert path.read_text() == "text now\n"


def test_write_refuses_a_file_that_changed_since_it_was_read(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "conf.toml", "a = 1\n")
    read, write_file, _ = session()
    run(read, ctx, path="conf.toml")
    path.write_text("a = 1\nb = 2\n")  # a formatter, the user, a command
    status, text = run(write_file, ctx, path="conf.toml", content="c = 3\n")
    assert status == "error"
    assert text.startswith("conf.toml changed since this session last read it (now 12 bytes)")
    assert path.read_text() == "a = 1\nb = 2\n"


def test_an_edit_of_an_unread_file_does_not_make_it_writable(
    workspace: Path, ctx: ToolContext
) -> None:
    write(workspace, "big.py", "a = 1\nb = 2\n")
    _, write_file, edit = session()
    assert run(edit, ctx, path="big.py", old_text="a = 1", new_text="a = 0")[0] == "success"
    assert run(write_file, ctx, path="big.py", content="")[0] == "error"


def test_edit_says_when_the_file_changed_since_it_was_read(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "m.py", "a = 1\nb = 2\n")
    read, write_file, edit = session()
    run(read, ctx, path="m.py")
    path.write_text("a = 1\nb = 20\n")
    status, text = run(edit, ctx, path="m.py", old_text="b = 2\n", new_text="b = 3\n")
    assert status == "error"
    assert "m.py changed since this session last read it. Read the file again" in text
    status, text = run(edit, ctx, path="m.py", old_text="a = 1", new_text="a = 5")
    assert status == "success"
    assert text.endswith(
        "m.py changed since this session last read it. The edit matched its current text; "
        "read it again before relying on the rest of it."
    )
    assert run(write_file, ctx, path="m.py", content="")[0] == "error"  # still not re-read


def test_the_ledger_forgets_the_oldest_beyond_its_bound(workspace: Path, ctx: ToolContext) -> None:
    for name in ("a", "b", "c"):
        write(workspace, name, "x\n")
    read, write_file, _ = session(max_files=2)
    for name in ("a", "b", "c"):
        run(read, ctx, path=name)
    assert run(write_file, ctx, path="a", content="y\n")[0] == "error"
    assert run(write_file, ctx, path="c", content="y\n")[0] == "success"


# --- edit_file near misses ---------------------------------------------------------------

SOURCE = "class A:\n    def f(self):\n        return 1  \n\n    def g(self):\n        return 2\n"


def test_an_edit_off_only_in_trailing_whitespace_applies_and_says_so(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "a.py", SOURCE)
    old = "    def f(self):\n        return 1\n"
    status, text = run(EditFile(), ctx, path="a.py", old_text=old, new_text=old.replace("1", "9"))
    assert status == "success"
    assert text.startswith("Edited a.py: 1 replacement (line 2), matched with the trailing")
    assert path.read_text() == SOURCE.replace("return 1  ", "return 9")


def test_an_edit_with_lost_indentation_is_shifted_back(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "a.py", SOURCE)
    old = "def g(self):\n    return 2"  # copied dedented by four
    new = "def g(self):\n    if self:\n        return 3\n    return 2"
    status, text = run(EditFile(), ctx, path="a.py", old_text=old, new_text=new)
    assert status == "success" and "indentation" in text and "(line 5)" in text
    assert path.read_text().endswith(
        "    def g(self):\n        if self:\n            return 3\n        return 2\n"
    )


def test_an_ambiguous_near_miss_is_refused_with_its_places(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "b.py", "if a:\n    x = 1\nif b:\n  x = 1\n")
    status, text = run(EditFile(), ctx, path="b.py", old_text="      x = 1\n", new_text="x = 2\n")
    assert status == "error"
    assert "ignoring whitespace it matches 2 places (lines 2, 4)" in text
    assert path.read_text() == "if a:\n    x = 1\nif b:\n  x = 1\n"


def test_a_miss_shows_the_closest_lines_with_their_numbers(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "a.py", SOURCE)
    old = "    def g(self):\n        return 22\n"
    status, text = run(EditFile(), ctx, path="a.py", old_text=old, new_text="x")
    assert status == "error"
    assert text.endswith("The closest lines:\n     5\t    def g(self):\n     6\t        return 2")
    assert path.read_text() == SOURCE


# --- other agents' argument names --------------------------------------------------------


def test_claude_code_and_opencode_names_are_accepted(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "m.py", "a = 1\n")
    read, _, edit = session()
    assert run(read, ctx, file_path="m.py", offset="1", limit=None)[0] == "success"
    status, _ = run(edit, ctx, file_path="m.py", old_string="a = 1", new_string="a = 2")
    assert status == "success"
    status, _ = run(edit, ctx, filePath="m.py", oldString="a = 2", newString="a = 3")
    assert status == "success" and path.read_text() == "a = 3\n"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            {"path": "m.py", "file_path": "m.py", "old_text": "a", "new_text": "b"},
            "`path` and `file_path` name the same field",
        ),
        (
            {"path": "m.py", "old_txt": "a", "new_text": "b"},
            "unknown field `old_txt` (did you mean `old_text`?)",
        ),
        (
            {"path": "m.py", "old_text": "a", "new_text": "b", "replace_all": "sometimes"},
            "expected `bool`, got `str` (at `replace_all`)",
        ),
    ],
)
def test_a_malformed_edit_teaches_the_parameters(
    args: dict[str, Any], problem: str, ctx: ToolContext
) -> None:
    with pytest.raises(ToolFailure) as caught:
        EditFile().validate(args)
    assert caught.value.error.kind == "invalid_args"
    assert caught.value.error.message == (
        f"invalid arguments for edit_file: {problem}\n"
        "edit_file takes:\n"
        "  path: string (required)\n"
        "  old_text: string (required)\n"
        "  new_text: string (required)\n"
        "  replace_all: boolean (default false)"
    )


def test_validate_gives_only_what_the_model_sent_under_our_names() -> None:
    assert ReadFile().validate({"file_path": "a", "offset": "20", "limit": None}) == {
        "path": "a",
        "offset": 20,
    }
    # a model that sends every name it knows, the unused ones as null
    assert ReadFile().validate({"path": None, "file_path": "a", "filePath": None}) == {"path": "a"}


@pytest.mark.parametrize(
    "case",
    [  # a Markdown hard line break on a context line; then the same, dedented
        (
            "first line  \nsecond line\n",
            "first line\nsecond line",
            "first line\nsecond line changed",
            "first line  \nsecond line changed\n",
        ),
        ("    a  \n    b\n", "a\nb", "a\nc", "    a  \n    c\n"),
    ],
)
def test_a_near_miss_keeps_the_files_whitespace_on_the_lines_it_does_not_change(
    workspace: Path, ctx: ToolContext, case: tuple[str, str, str, str]
) -> None:
    """Before, new_text was written as given: an unchanged context line lost the
    trailing whitespace the file had, while the result said it had been kept."""
    content, old, new, written = case
    path = write(workspace, "doc.md", content)
    status, text = run(EditFile(), ctx, path="doc.md", old_text=old, new_text=new)
    assert status == "success", text
    assert path.read_text() == written


def test_near_miss_lines_are_numbered_as_read_file_numbers_them(
    workspace: Path, ctx: ToolContext
) -> None:
    """U+2028 in a string and a page break (\\f) are not line ends for read_file; before,
    the near miss and the closest lines counted them (str.splitlines), one line off."""
    script = 'const s = "a\u2028b";\nfunction f() {\n    return s;\n}\n'
    path = write(workspace, "s.js", script)
    status, text = run(EditFile(), ctx, path="s.js", old_text="return s;", new_text="return 1;")
    assert status == "success" and "(line 3)" in text, text
    assert path.read_text() == script.replace("return s;", "return 1;")
    status, text = run(EditFile(), ctx, path="s.js", old_text='const s = "a\u2028c";', new_text="x")
    assert status == "error"
    assert text.endswith('The closest lines:\n     1\tconst s = "a\u2028b";')
    write(workspace, "m.py", "import os\n\x0c\ndef f():\n    return 1\n")
    old = "def f():\n    return 2\n"
    status, text = run(EditFile(), ctx, path="m.py", old_text=old, new_text="x")
    assert status == "error"
    assert text.endswith("The closest lines:\n     3\tdef f():\n     4\t    return 1")


def test_validate_resolves_a_near_miss_to_the_files_lines(
    workspace: Path, ctx: ToolContext
) -> None:
    """The checked arguments carry the file's exact lines and new_text as it will be
    written, so the policy, the approval and hooks see what the edit does (before, they
    saw the model's text, found nowhere in the file); the result still says the match
    was corrected."""
    path = write(workspace, "a.py", SOURCE)
    edit = EditFile(workspace=workspace)
    old = "def g(self):\n    return 2"  # copied dedented by four
    given = {"path": "a.py", "old_text": old, "new_text": old.replace("2", "3")}
    checked = edit.validate(given)
    assert checked == {
        "path": "a.py",
        "old_text": "    def g(self):\n        return 2\n",
        "new_text": "    def g(self):\n        return 3\n",
        "near_miss": "indentation",
    }
    assert EditFile(workspace=workspace).validate({**given, "old_text": "return 1"}) == {
        **given,
        "old_text": "return 1",
    }  # exact: as given
    with pytest.raises(ToolFailure) as caught:  # validate's to set, not the model's
        edit.validate(checked)
    assert "unknown field `near_miss`" in caught.value.error.message
    assert "near_miss" not in edit.parameters["properties"]
    status, text = run(edit, ctx, **checked)
    assert status == "success"
    assert text.startswith("Edited a.py: 1 replacement (line 5), matched with the indentation")
    assert path.read_text() == SOURCE.replace("return 2", "return 3")


def test_validate_reads_no_file_outside_the_workspace(workspace: Path, tmp_path: Path) -> None:
    """validate runs before the permission policy: resolving a near miss there must not
    read a file the policy has not allowed (its lines went into ToolStarted, the record
    and the question before anyone allowed the edit), through a path or a link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "conf").write_text(SOURCE)
    (workspace / "link").symlink_to(outside / "conf")
    edit = EditFile(workspace=workspace)
    old = "def g(self):\n    return 2"  # a near miss, were the file read
    for path in (str(outside / "conf"), "../outside/conf", "link"):
        given = {"path": path, "old_text": old, "new_text": "x"}
        assert edit.validate(given) == given


def test_a_checked_near_miss_does_not_apply_elsewhere_once_the_file_changed(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "a.py", SOURCE)
    edit = EditFile(workspace=workspace)
    old = "def g(self):\n    return 2"
    checked = edit.validate({"path": "a.py", "old_text": old, "new_text": "x"})
    assert checked["near_miss"] == "indentation"
    lines = SOURCE.splitlines(keepends=True)
    changed = "".join(f"    {line}" if line.strip() else line for line in lines)
    path.write_text(changed)  # still a near miss, with another shift: not what was approved
    status, text = run(edit, ctx, **checked)
    assert status == "error" and "changed after this edit was checked" in text
    assert path.read_text() == changed


def test_a_path_the_system_cannot_open_is_refused_not_a_crash(
    workspace: Path, ctx: ToolContext
) -> None:
    """A name too long or a loop of links is the model's mistake to hear about, not a
    crash of the tool (before: `crashed: OSError: File name too long`)."""
    (workspace / "loop").symlink_to("loop")
    read, write_file, _ = session()
    for path in ("a" * 5000, "loop"):
        for tool, args in ((read, {}), (write_file, {"content": "x"})):
            status, text = run(tool, ctx, path=path, **args)
            assert status == "error" and text.startswith("cannot open "), text
            assert len(text) < 400
