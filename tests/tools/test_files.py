"""read_file, write_file, edit_file, list_dir and the workspace paths, on real files."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from codecoder.boundary import is_inside, resolve
from codecoder.kernel.ports import ToolContext, ToolFailure
from codecoder.tools.files import MAX_READ_BYTES, EditFile, ListDir, ReadFile, WriteFile
from codecoder.tools.ledger import ReadLedger
from codecoder.tools.workspace import display

from .conftest import write


def run(tool: Any, ctx: ToolContext, **args: Any) -> tuple[str, str]:
    result = tool.run(args, ctx)
    assert result.tool_call_id == ctx.call_id
    return result.status, result.text


def session() -> tuple[ReadFile, WriteFile, EditFile]:
    """The file tools of one session, sharing what it has read."""
    reads = ReadLedger()
    return ReadFile(reads), WriteFile(reads), EditFile(reads)


# --- workspace.resolve / is_inside ---------------------------------------------------


def test_resolve_relative_absolute_and_home(workspace: Path, tmp_path: Path) -> None:
    real = Path(os.path.realpath(workspace))
    assert resolve(workspace, "a/b.txt") == real / "a" / "b.txt"
    assert resolve(workspace, str(tmp_path / "x")) == Path(os.path.realpath(tmp_path)) / "x"
    assert resolve(workspace, "~/notes.md") == Path(os.path.realpath(Path.home())) / "notes.md"
    assert resolve(workspace, ".") == real


def test_resolve_follows_symlinks_and_dot_dot(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    (workspace / "sub").mkdir()
    assert resolve(workspace, "escape/secret") == Path(os.path.realpath(outside)) / "secret"
    assert resolve(workspace, "sub/../../outside") == Path(os.path.realpath(outside))
    # `..` after a symlink climbs from the link's target, as the kernel does
    assert resolve(workspace, "escape/..") == Path(os.path.realpath(tmp_path))


def test_resolve_rejects_a_nul_byte(workspace: Path) -> None:
    with pytest.raises(ValueError):
        resolve(workspace, "a\0b")


NO_SUCH_USER = "~codecoder-no-such-user-4711"


def test_resolve_names_an_unknown_user_in_a_value_error(workspace: Path) -> None:
    with pytest.raises(ValueError, match="no such user"):
        resolve(workspace, f"{NO_SUCH_USER}/x")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (ReadFile(), {"path": f"{NO_SUCH_USER}/x"}),
        (WriteFile(), {"path": f"{NO_SUCH_USER}/x", "content": "x"}),
        (EditFile(), {"path": f"{NO_SUCH_USER}/x", "old_text": "a", "new_text": "b"}),
        (ListDir(), {"path": NO_SUCH_USER}),
    ],
)
def test_an_unknown_user_is_an_error_result(
    tool: Any, args: dict[str, Any], ctx: ToolContext
) -> None:
    status, text = run(tool, ctx, **args)
    assert status == "error"
    assert text == f"invalid path {args['path']!r}: cannot expand {NO_SUCH_USER!r}: no such user"


def test_is_inside_uses_real_paths(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    (workspace / "sub").mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert is_inside(workspace, [workspace])
    assert is_inside(workspace / "sub" / "new.txt", [workspace])
    assert is_inside(alias / "sub", [workspace])  # the same place under another name
    assert not is_inside(workspace / "escape" / "secret", [workspace])
    assert not is_inside(workspace / ".." / "outside", [workspace])
    assert not is_inside(Path(f"{workspace}-sibling"), [workspace])  # a prefix is not a parent
    assert is_inside(outside / "x", [workspace, outside])
    assert not is_inside(outside, [])


def test_display_is_relative_inside_and_absolute_outside(workspace: Path, tmp_path: Path) -> None:
    assert display(workspace, resolve(workspace, "a/b.txt")) == "a/b.txt"
    assert display(workspace, resolve(workspace, ".")) == "."
    elsewhere = resolve(workspace, str(tmp_path / "x"))
    assert display(workspace, elsewhere) == str(elsewhere)


# --- read_file -----------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "a.txt", "first\n\tsecond\r\nthird")
    assert run(ReadFile(), ctx, path="a.txt") == (
        "success",
        "     1\tfirst\n     2\t\tsecond\n     3\tthird\n[lines 1-3 of 3 (20 bytes)]",
    )


def test_read_line_ranges_and_the_note_on_how_to_go_on(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "n.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    status, text = run(ReadFile(), ctx, path="n.txt", offset=4, limit=3)
    assert status == "success"
    assert text.splitlines() == [
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
        "[lines 4-6 of 10 (71 bytes); read on with offset=7]",
    ]
    assert run(ReadFile(), ctx, path="n.txt", offset=10)[1].splitlines() == [
        "    10\tline 10",
        "[lines 10-10 of 10 (71 bytes)]",
    ]
    status, text = run(ReadFile(), ctx, path="n.txt", offset=11)
    assert status == "error" and "past the end" in text and "10 lines" in text


def test_read_cuts_long_lines(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "long.txt", "x" * 5000 + "\nshort\n" + "é" * 3000 + "\n")
    lines = run(ReadFile(), ctx, path="long.txt")[1].splitlines()
    assert lines[0] == "     1\t" + "x" * 2000 + " [… line cut at 2000 characters]"
    assert lines[1] == "     2\tshort"
    assert lines[2].startswith("     3\t" + "é" * 2000 + " [… line cut")


def test_read_skips_over_a_huge_line_without_losing_count(
    workspace: Path, ctx: ToolContext
) -> None:
    write(workspace, "huge.txt", "y" * 3_000_000 + "\nafter\n")
    text = run(ReadFile(), ctx, path="huge.txt", offset=2)[1]
    assert text == "     2\tafter\n[lines 2-2 of 2 (2.9 MB)]"


def test_read_caps_total_output_and_says_where_to_continue(
    workspace: Path, ctx: ToolContext
) -> None:
    write(workspace, "big.txt", "".join(f"{n:04} " + "z" * 1000 + "\n" for n in range(1, 1001)))
    text = run(ReadFile(), ctx, path="big.txt")[1]
    assert len(text.encode()) <= MAX_READ_BYTES + 200
    last_line, note = text.splitlines()[-2:]
    shown = int(last_line.split("\t")[0])
    assert (
        note
        == f"[lines 1-{shown} of 1000 (982.4 KB); 50 KB per read; read on with offset={shown + 1}]"
    )
    following = run(ReadFile(), ctx, path="big.txt", offset=shown + 1)[1]
    assert following.startswith(f"{shown + 1:>6}\t{shown + 1:04} ")


def test_read_refuses_binary_and_non_utf8(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    status, text = run(ReadFile(), ctx, path="img.png")
    assert status == "error" and "binary" in text and "img.png" in text
    write(workspace, "latin.txt", "café\n".encode("latin-1"))
    status, text = run(ReadFile(), ctx, path="latin.txt")
    assert status == "error" and "not UTF-8" in text


def test_read_accepts_a_multibyte_char_cut_by_the_sniff_window(
    workspace: Path, ctx: ToolContext
) -> None:
    write(workspace, "edge.txt", ("a" * 99 + "\n") * 81 + "b" * 91 + "é\n")  # é at 8191
    status, text = run(ReadFile(), ctx, path="edge.txt")
    assert status == "success" and text.splitlines()[-2] == "    82\t" + "b" * 91 + "é"


def test_read_empty_missing_directory_and_fifo(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "empty.txt", "")
    assert run(ReadFile(), ctx, path="empty.txt") == ("success", "empty.txt is empty (0 bytes).")
    status, text = run(ReadFile(), ctx, path="nope.txt")
    assert (status, text) == ("error", "file not found: nope.txt")
    (workspace / "dir").mkdir()
    status, text = run(ReadFile(), ctx, path="dir")
    assert status == "error" and "list_dir" in text
    os.mkfifo(workspace / "pipe")
    status, text = run(ReadFile(), ctx, path="pipe")  # must not block on open
    assert status == "error" and "not a regular file" in text


def test_read_unreadable_file_is_an_error_result(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "secret.txt", "x")
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running with privileges that ignore file modes")
        status, text = run(ReadFile(), ctx, path="secret.txt")
        assert status == "error" and "Permission denied" in text
    finally:
        path.chmod(0o644)


# --- write_file ----------------------------------------------------------------------


def test_write_creates_parents_and_round_trips(workspace: Path, ctx: ToolContext) -> None:
    status, text = run(WriteFile(), ctx, path="new/deep/f.py", content="a = 1\nb = 'é'\n")
    assert status == "success"
    assert text == "Created new/deep/f.py (15 bytes, 2 lines)."
    read, write_file, _ = session()
    assert run(read, ctx, path="new/deep/f.py")[1].splitlines()[:2] == [
        "     1\ta = 1",
        "     2\tb = 'é'",
    ]
    status, text = run(write_file, ctx, path="new/deep/f.py", content="x")
    assert text == "Overwrote new/deep/f.py (1 byte, 1 line; was 15 bytes)."
    assert (workspace / "new/deep/f.py").read_text() == "x"
    assert os.listdir(workspace / "new/deep") == ["f.py"]  # no temp file left behind


def test_write_keeps_the_mode_of_an_existing_file(workspace: Path, ctx: ToolContext) -> None:
    for mode in (0o755, 0o600):
        path = write(workspace, f"m{mode:o}.sh", "old")
        path.chmod(mode)
        read, write_file, _ = session()
        run(read, ctx, path=path.name)
        run(write_file, ctx, path=path.name, content="new")
        assert stat.S_IMODE(path.stat().st_mode) == mode
        assert path.read_text() == "new"


def test_write_gives_a_new_file_the_umask_mode(workspace: Path, ctx: ToolContext) -> None:
    previous = os.umask(0o027)
    try:
        run(WriteFile(), ctx, path="fresh.txt", content="x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((workspace / "fresh.txt").stat().st_mode) == 0o640


def test_write_through_a_symlink_writes_its_target(workspace: Path, ctx: ToolContext) -> None:
    target = write(workspace, "real.txt", "old")
    (workspace / "link.txt").symlink_to(target)
    read, write_file, _ = session()
    run(read, ctx, path="real.txt")  # the same file by its other name
    assert run(write_file, ctx, path="link.txt", content="new")[0] == "success"
    assert (workspace / "link.txt").is_symlink()
    assert target.read_text() == "new"


def test_write_errors_on_a_directory_or_a_file_in_the_way(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "dir").mkdir()
    status, text = run(WriteFile(), ctx, path="dir", content="x")
    assert status == "error" and "is a directory" in text
    write(workspace, "plain", "x")
    status, text = run(WriteFile(), ctx, path="plain/child.txt", content="x")
    assert status == "error" and "plain" in text


def test_write_and_edit_refuse_a_read_only_file(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "locked.txt", "old\n")
    path.chmod(0o444)
    try:
        for tool, args in (
            (WriteFile(), {"content": "new\n"}),
            (EditFile(), {"old_text": "old", "new_text": "new"}),
        ):
            status, text = run(tool, ctx, path="locked.txt", **args)
            assert status == "error"
            assert text.startswith("locked.txt is read-only (mode 444)")
        assert path.read_text() == "old\n"
        assert stat.S_IMODE(path.stat().st_mode) == 0o444
    finally:
        path.chmod(0o644)


def test_write_is_atomic_for_a_concurrent_reader(workspace: Path, ctx: ToolContext) -> None:
    versions = ["A" * 200_000, "B" * 300_000]
    path = write(workspace, "shared.txt", versions[0])
    seen: set[str] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.add(path.read_text())

    read, write_file, _ = session()
    run(read, ctx, path="shared.txt")
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(40):
            run(write_file, ctx, path="shared.txt", content=versions[n % 2])
    finally:
        stop.set()
        thread.join()
    assert seen <= set(versions)


# --- edit_file -----------------------------------------------------------------------


def test_edit_replaces_one_exact_occurrence(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "m.py", "def f():\n    return 1\n\ndef g():\n    return 2\n")
    status, text = run(EditFile(), ctx, path="m.py", old_text="return 2", new_text="return 3")
    assert (status, text) == ("success", "Edited m.py: 1 replacement (line 5).")
    assert path.read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"


def test_edit_fails_clearly_when_old_text_is_absent(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "m.py", "    indented = True\n")
    status, text = run(EditFile(), ctx, path="m.py", old_text="missing", new_text="x")
    assert status == "error" and "old_text not found in m.py" in text
    assert path.read_text() == "    indented = True\n"


def test_edit_not_unique_then_replace_all(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "m.py", "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    status, text = run(EditFile(), ctx, path="m.py", old_text="x = 1", new_text="x = 10")
    assert status == "error"
    assert "occurs 3 times" in text and "lines 1, 3, 5" in text and "replace_all" in text
    assert path.read_text().count("x = 1\n") == 3
    status, text = run(
        EditFile(), ctx, path="m.py", old_text="x = 1", new_text="x = 10\n#", replace_all=True
    )
    assert (status, text) == ("success", "Edited m.py: 3 replacements (lines 1, 4, 7).")
    assert path.read_text() == "x = 10\n#\ny = 2\nx = 10\n#\nz = 3\nx = 10\n#\n"


def test_edit_refuses_no_op_and_empty_old_text(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "m.py", "a\n")
    status, text = run(EditFile(), ctx, path="m.py", old_text="a", new_text="a")
    assert status == "error" and "the same" in text
    status, text = run(EditFile(), ctx, path="m.py", old_text="", new_text="b")
    assert status == "error" and "write_file" in text


def test_edit_matches_lf_text_in_a_crlf_file(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    status, _ = run(EditFile(), ctx, path="w.txt", old_text="one\ntwo", new_text="1\n2")
    assert status == "success"
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_lines_added_to_a_crlf_file_get_crlf(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    run(EditFile(), ctx, path="w.txt", old_text="two", new_text="two\nTWO")
    assert path.read_bytes() == b"one\r\ntwo\r\nTWO\r\nthree\r\n"
    run(EditFile(), ctx, path="w.txt", old_text="TWO", new_text="2a\r\n2b")  # already CRLF
    assert path.read_bytes() == b"one\r\ntwo\r\n2a\r\n2b\r\nthree\r\n"


def test_an_edit_in_a_mixed_file_keeps_the_text_as_written(
    workspace: Path, ctx: ToolContext
) -> None:
    path = write(workspace, "mixed.txt", b"x\r\ny\ny\r\n")
    run(EditFile(), ctx, path="mixed.txt", old_text="y\n", new_text="Z\nW\n")
    assert path.read_bytes() == b"x\r\nZ\nW\ny\r\n"


def test_edit_keeps_mode_and_refuses_binary_and_missing(workspace: Path, ctx: ToolContext) -> None:
    path = write(workspace, "run.sh", "echo hi\n")
    path.chmod(0o750)
    run(EditFile(), ctx, path="run.sh", old_text="hi", new_text="there")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750 and path.read_text() == "echo there\n"
    write(workspace, "b.bin", b"ab\x00cd")
    status, text = run(EditFile(), ctx, path="b.bin", old_text="ab", new_text="x")
    assert status == "error" and "binary" in text
    assert run(EditFile(), ctx, path="gone.py", old_text="a", new_text="b") == (
        "error",
        "file not found: gone.py",
    )


# --- list_dir ------------------------------------------------------------------------


def test_list_dir_sorted_with_markers_and_depth(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "b.txt", "")
    write(workspace, "a/inner/deep/x.txt", "")
    write(workspace, "a/one.txt", "")
    (workspace / "link").symlink_to(workspace / "a")
    assert run(ListDir(), ctx)[1] == "a/\nb.txt\nlink@"
    assert run(ListDir(), ctx, depth=2)[1] == "a/\n  inner/\n  one.txt\nb.txt\nlink@"
    assert run(ListDir(), ctx, path="a", depth=3)[1] == "inner/\n  deep/\n    x.txt\none.txt"


def test_list_dir_skips_git_and_honours_gitignore(tree: Path, ctx: ToolContext) -> None:
    listed = run(ListDir(), ctx, depth=2)[1].splitlines()
    assert "keep.log" in listed and "src/" in listed and "  app.py" in listed
    for hidden in (".git/", "a.log", "build/", "excluded.txt", "  generated.py"):
        assert hidden not in listed


def test_list_dir_escapes_a_newline_in_a_name(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "evil\nfake.txt", "")
    write(workspace, "tab\there", "")
    write(workspace, "plain.txt", "")
    assert run(ListDir(), ctx)[1].splitlines() == [
        "'evil\\nfake.txt'",
        "plain.txt",
        "'tab\\there'",
    ]


def test_list_dir_caps_entries_with_a_note(workspace: Path, ctx: ToolContext) -> None:
    for n in range(520):
        write(workspace, f"f{n:03}", "")
    lines = run(ListDir(), ctx)[1].splitlines()
    assert len(lines) == 501 and lines[0] == "f000" and "cut at 500 entries" in lines[-1]


def test_list_dir_errors(workspace: Path, ctx: ToolContext) -> None:
    write(workspace, "f.txt", "x")
    assert run(ListDir(), ctx, path="f.txt")[0] == "error"
    assert run(ListDir(), ctx, path="missing") == ("error", "directory not found: missing")
    (workspace / "empty").mkdir()
    assert run(ListDir(), ctx, path="empty") == ("success", "empty is empty.")


# --- arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (ReadFile(), {"path": "a.txt", "offset": "five"}),
        (ReadFile(), {"path": "a.txt", "limit": 0}),
        (ReadFile(), {"path": 7}),
        (ReadFile(), {}),
        (ReadFile(), {"path": "a.txt", "lines": 3}),
        (WriteFile(), {"path": "a.txt"}),
        (EditFile(), {"path": "a", "old_text": "a", "new_text": "b", "replace_all": "yes"}),
        (ListDir(), {"depth": 9}),
    ],
)
def test_arguments_that_do_not_fit_are_invalid_args(
    tool: Any, args: dict[str, Any], ctx: ToolContext
) -> None:
    with pytest.raises(ToolFailure) as caught:
        tool.run(args, ctx)
    assert caught.value.error.kind == "invalid_args"
    assert tool.name in caught.value.error.message


def test_schemas_carry_field_descriptions() -> None:
    for tool in (ReadFile(), WriteFile(), EditFile(), ListDir()):
        schema = tool.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert all(field.get("description") for field in schema["properties"].values())
        assert tool.description and tool.risk in ("read", "write")
    assert ReadFile().parameters["required"] == ["path"]
    assert EditFile().parameters["required"] == ["path", "old_text", "new_text"]


def test_a_nul_byte_in_a_path_is_an_error_result(ctx: ToolContext) -> None:
    status, text = run(ReadFile(), ctx, path="a\0b")
    assert status == "error" and "invalid path" in text


def test_no_file_tool_nor_its_checkpoint_drops_a_lock_on_the_session_store(
    workspace: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    """The whole class, measured by the lock itself: this process holds a POSIX lock on
    a byte of the session store, and after read_file, write_file and edit_file (with
    the checkpoints taken around them, which read the file before the tool runs) on
    every name a hostile model could use for the store (its path, WAL, shared memory, a
    symlink, a hard link, /proc/self/fd/N), another process still cannot take it. Once
    the store is closed the file is only a binary file again."""
    import fcntl
    import subprocess
    import sys

    from codecoder.checkpoints.objects import ObjectStore
    from codecoder.checkpoints.record import Checkpoints, CheckpointSink, checkpointed
    from codecoder.sessions import SessionStore

    data = workspace / "data"
    data.mkdir()
    db = data / "sessions.sqlite3"
    store = SessionStore(db)
    store.create(workspace, "model")
    (workspace / "link").symlink_to(db)
    os.link(db, workspace / "hard")
    held = os.open(db, os.O_RDWR)
    fcntl.lockf(held, fcntl.LOCK_SH, 1, 0)  # byte 0; SQLite locks bytes at 1 GiB
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\n"
        "except OSError:\n    sys.exit(3)\n"
    )

    def still_locked() -> bool:
        return subprocess.run([sys.executable, "-c", probe, str(db)], check=False).returncode == 3

    sink = CheckpointSink(save=lambda *args: None)
    kept = Checkpoints(ObjectStore(workspace, tmp_path / "cp"), sink)
    tools = {t.name: t for t in checkpointed([ReadFile(), WriteFile(), EditFile()], kept)}
    names = ["data/sessions.sqlite3", "link", "hard", f"/proc/self/fd/{held}"]
    names += [f"data/{n}" for n in ("sessions.sqlite3-wal", "sessions.sqlite3-shm")]
    assert all((workspace / n).exists() for n in names[-2:])
    try:
        assert still_locked()
        for name in names:
            calls = {
                "read_file": {"path": name},
                "write_file": {"path": name, "content": "x"},
                "edit_file": {"path": name, "old_text": "SQLite", "new_text": "x"},
            }
            for tool, args in calls.items():
                status, text = run(tools[tool], ctx, **args)
                assert status == "error" and "session store" in text, (tool, name, text)
                assert still_locked(), (tool, name)
    finally:
        kept.close()
        os.close(held)
        store.close()
    status, text = run(ReadFile(), ctx, path="hard")
    assert status == "error" and "session store" not in text  # binary, that is all
