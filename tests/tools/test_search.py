"""glob and grep on real trees; grep's two engines (ripgrep, pure Python) compared on the
same tree, and ripgrep's child process killed and reaped on cancel."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.ports import ToolContext, ToolFailure
from codecoder.tools.search import Glob, Grep
from codecoder.tools.workspace import IgnoreRules, compile_rules, walk
from tests.procfs import children_of, read

from .conftest import write

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep is not installed")


def run(tool: Any, ctx: ToolContext, **args: Any) -> tuple[str, str]:
    result = tool.run(args, ctx)
    return result.status, result.text


# --- the glob syntax and the ignore rules --------------------------------------------


@pytest.mark.parametrize(
    ("line", "path", "is_dir", "expected"),
    [
        ("*.py", "a.py", False, True),
        ("*.py", "deep/er/a.py", False, True),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "sub/top.txt", False, None),
        ("build/", "build", True, True),
        ("build/", "build", False, None),  # a file named build is not a directory
        ("build/", "x/build", True, True),
        ("build", "build/file", False, None),  # the path itself, never its parents
        ("src/*.py", "src/a.py", False, True),
        ("src/*.py", "src/x/a.py", False, None),
        ("a/**/b", "a/b", False, True),
        ("a/**/b", "a/x/y/b", False, True),
        ("logs/**", "logs/x/y", False, True),
        ("logs/**", "logs", True, None),
        ("*.{ts,tsx}", "c.tsx", False, True),
        ("[!a]b", "bb", False, True),
        ("[!a]b", "ab", False, None),
        ("!keep.py", "keep.py", False, False),
        ("\\!bang", "!bang", False, True),
        ("# comment", "# comment", False, None),
        ("trailing   ", "trailing", False, True),
    ],
)
def test_gitignore_lines_match_like_ripgrep(
    line: str, path: str, is_dir: bool, expected: bool | None
) -> None:
    assert compile_rules([line]).match(path, is_dir) is expected


def test_the_last_matching_line_decides() -> None:
    rules = compile_rules(["*.log", "!keep.log", "keep.log"])
    assert rules.match("keep.log", False) is True
    assert compile_rules(["*.log", "!keep.log"]).match("keep.log", False) is False


def test_walker_honours_every_ignore_file_and_resets_in_a_nested_repo(tree: Path) -> None:
    seen = {entry.rel for entry in walk(tree)}
    for ignored in ("a.log", "excluded.txt", "build", "src/build", "top_only.txt",
                    "docs/a/b/c.tmp", "hidden_by_dotignore.txt", "src/generated.py",
                    "src/pkg/generated.py", "vendor/lib/x.gen", ".git", ".git/HEAD"):  # fmt: skip
        assert ignored not in seen, ignored
    for kept in ("keep.log", "src/top_only.txt", "docs/readme.md", ".config/settings.toml",
                 "vendor/lib/app.log", "link.txt", "linkdir"):  # fmt: skip
        assert kept in seen, kept
    assert "linkdir/app.py" not in seen  # symlinked directories are not followed


def test_walker_order_is_by_name_bytes_within_each_directory(tree: Path) -> None:
    names = ["B.txt", "a", "a-b.txt", "a.b", "a.txt", "x:y.txt", "\u00e9.txt"]
    top = [entry.rel for entry in walk(tree, max_depth=1) if entry.rel in names]
    assert top == names
    nested = [entry.rel for entry in walk(tree, max_depth=2)]
    assert nested.index("a") + 1 == nested.index("a/b.txt")  # pre-order


def test_gitignore_does_not_apply_outside_a_git_repository(workspace: Path) -> None:
    write(workspace, ".gitignore", "*.log\n")
    write(workspace, "x.log", "x")
    write(workspace, ".ignore", "y.txt\n")
    write(workspace, "y.txt", "y")
    assert {entry.rel for entry in walk(workspace)} == {".gitignore", ".ignore", "x.log"}


def test_rules_from_above_the_walk_root_apply(tree: Path) -> None:
    rules = IgnoreRules.above(str(tree / "src"))
    assert rules.in_repo
    assert rules.ignored(str(tree / "src" / "x.log"), False)
    assert not rules.ignored(str(tree / "src" / "x.py"), False)


# --- glob ----------------------------------------------------------------------------


def test_glob_star_star_recurses_and_single_star_stays_at_the_top(
    tree: Path, ctx: ToolContext
) -> None:
    status, text = run(Glob(), ctx, pattern="**/*.py")
    assert status == "success"
    assert set(text.splitlines()) == {"src/app.py", "src/pkg/mod.py"}
    write(tree, "top.py", "x")
    assert run(Glob(), ctx, pattern="*.py")[1] == "top.py"


def test_glob_honours_gitignore_and_never_enters_git(tree: Path, ctx: ToolContext) -> None:
    listed = set(run(Glob(), ctx, pattern="**")[1].splitlines())
    assert "keep.log" in listed and "docs/readme.md" in listed
    assert not {"a.log", "excluded.txt", "build/out.txt", "src/generated.py", ".git/HEAD"} & listed
    assert "linkdir/app.py" not in listed


def test_glob_braces_prefix_and_absolute_patterns(tree: Path, ctx: ToolContext) -> None:
    write(tree, "web/a.ts", "x")
    write(tree, "web/deep/b.tsx", "x")
    write(tree, "web/c.js", "x")
    assert set(run(Glob(), ctx, pattern="web/**/*.{ts,tsx}")[1].splitlines()) == {
        "web/a.ts",
        "web/deep/b.tsx",
    }
    assert run(Glob(), ctx, pattern=f"{tree}/web/*.js")[1] == "web/c.js"
    assert run(Glob(), ctx, pattern="*.js", path="web")[1] == "web/c.js"


def test_glob_sorts_newest_first_and_caps(workspace: Path, ctx: ToolContext) -> None:
    for n in range(510):
        path = write(workspace, f"f{n:03}.txt", "x")
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
    status, text = run(Glob(), ctx, pattern="*.txt")
    lines = text.splitlines()
    assert status == "success"
    assert lines[:3] == ["f509.txt", "f508.txt", "f507.txt"]
    assert len(lines) == 501 and "510 files match" in lines[-1]


def test_glob_and_grep_report_an_unknown_user(workspace: Path, ctx: ToolContext) -> None:
    user = "~codecoder-no-such-user-4711"
    assert run(Glob(), ctx, pattern=f"{user}/*") == (
        "error",
        f"invalid path {user!r}: cannot expand {user!r}: no such user",
    )
    assert run(Grep(), ctx, pattern="x", path=f"{user}/src") == (
        "error",
        f"invalid path '{user}/src': cannot expand {user!r}: no such user",
    )


@pytest.mark.parametrize("use_rg", [True, False])
def test_a_newline_in_a_file_name_is_escaped(
    workspace: Path, ctx: ToolContext, use_rg: bool
) -> None:
    write(workspace, "evil\nfake.txt", "foo\n")
    write(workspace, "plain.txt", "foo\n")
    assert set(run(Glob(), ctx, pattern="*")[1].splitlines()) == {"'evil\\nfake.txt'", "plain.txt"}
    assert run(Grep(use_rg=use_rg), ctx, pattern="foo")[1].splitlines() == [
        "'evil\\nfake.txt':1:foo",
        "plain.txt:1:foo",
    ]


def test_glob_reports_no_match_and_a_missing_directory(workspace: Path, ctx: ToolContext) -> None:
    assert run(Glob(), ctx, pattern="*.nothing") == (
        "success",
        "No files match '*.nothing' in the workspace.",
    )
    status, text = run(Glob(), ctx, pattern="*", path="missing")
    assert status == "error" and "directory not found: missing" in text


def test_a_top_level_glob_that_finds_nothing_says_what_any_depth_would(
    tree: Path, ctx: ToolContext
) -> None:
    """`*.py` finds only top-level files; models used to other globs expect any depth."""
    assert run(Glob(), ctx, pattern="*.py") == (
        "success",
        "No files match '*.py' in the workspace. '**/*.py' (any depth) matches 2 files.",
    )
    assert run(Glob(), ctx, pattern="*.rs")[1] == "No files match '*.rs' in the workspace."


def test_grep_takes_other_agents_names(tree: Path, ctx: ToolContext) -> None:
    args = {"pattern": "FOO", "-i": True, "include": "*.py", "-n": True, "head_limit": "1"}
    status, text = run(Grep(use_rg=False), ctx, path="src", **args)
    assert status == "success"
    assert text.splitlines()[0] == "src/app.py:1:foo in src/app.py"
    assert "showing the first 1 matching lines" in text


# --- grep: behaviour of the shared output (Python engine, no ripgrep needed) ---------


def test_grep_output_format(tree: Path, ctx: ToolContext) -> None:
    status, text = run(Grep(use_rg=False), ctx, pattern="foo", path="src")
    assert status == "success"
    assert text.splitlines() == [
        "src/app.py:1:foo in src/app.py",
        "src/app.py:3:foo again",
        "src/pkg/mod.py:1:foo in src/pkg/mod.py",
        "src/pkg/mod.py:3:foo again",
        "src/top_only.txt:1:foo in src/top_only.txt",
        "src/top_only.txt:3:foo again",
    ]


def test_grep_context_groups_and_cap(tree: Path, ctx: ToolContext) -> None:
    text = run(Grep(use_rg=False), ctx, pattern="^foo", path="ctx.txt", context=1)[1]
    assert text.splitlines() == [
        "ctx.txt-4-line 4",
        "ctx.txt:5:foo 5",
        "ctx.txt-6-line 6",
        "ctx.txt:7:foo 7",
        "ctx.txt-8-line 8",
        "--",
        "ctx.txt-19-line 19",
        "ctx.txt:20:foo 20",
        "ctx.txt-21-line 21",
    ]
    capped = run(Grep(use_rg=False), ctx, pattern="match", path="many.txt", max_results=2)[1]
    assert capped.splitlines()[:2] == ["many.txt:1:match 1", "many.txt:2:match 2"]
    assert "showing the first 2 matching lines" in capped


def test_grep_skips_binary_files_and_refuses_one_named_explicitly(
    tree: Path, ctx: ToolContext
) -> None:
    text = run(Grep(use_rg=False), ctx, pattern="foo")[1]
    assert "data.bin" not in text and "late_nul.dat" not in text
    status, text = run(Grep(use_rg=False), ctx, pattern="foo", path="data.bin")
    assert status == "error" and "binary" in text


def test_grep_reports_invalid_regex_and_posix_classes(workspace: Path, ctx: ToolContext) -> None:
    status, text = run(Grep(), ctx, pattern="a(")
    assert status == "error" and "invalid regex 'a('" in text and "missing )" in text
    status, text = run(Grep(), ctx, pattern="[[:alpha:]]+")
    assert status == "error" and "POSIX" in text


@pytest.mark.parametrize("use_rg", [True, False])
@pytest.mark.parametrize(
    ("args", "what", "why"),
    [
        ({"pattern": "x\0"}, "pattern", "it contains a NUL character"),
        ({"pattern": "x", "glob": "*\0"}, "glob", "it contains a NUL character"),
        ({"pattern": "x\udcff"}, "pattern", "not valid Unicode"),
        ({"pattern": "x", "glob": "\ud800*"}, "glob", "not valid Unicode"),
    ],
)
def test_grep_refuses_what_no_child_process_can_take(
    ctx: ToolContext, args: dict[str, Any], what: str, why: str, use_rg: bool
) -> None:
    write(ctx.workspace, "a.txt", "x\n")
    status, text = run(Grep(use_rg=use_rg), ctx, **args)
    assert status == "error"
    assert text.startswith(f"invalid {what} {args[what]!r}: {why}")


def test_grep_no_matches_and_missing_path(workspace: Path, ctx: ToolContext) -> None:
    assert run(Grep(), ctx, pattern="nothing") == (
        "success",
        "No matches for 'nothing' in the workspace.",
    )
    status, text = run(Grep(), ctx, pattern="x", path="missing")
    assert status == "error" and "path not found: missing" in text


def test_grep_arguments_of_the_wrong_type_are_a_tool_failure(ctx: ToolContext) -> None:
    for bad in ({"pattern": 3}, {"pattern": "x", "max_results": 0}, {"pattern": "x", "ctx": 1}):
        with pytest.raises(ToolFailure) as caught:
            Grep().run(bad, ctx)
        assert caught.value.error.kind == "invalid_args"


def test_grep_python_engine_checks_cancel_between_files(tree: Path, ctx: ToolContext) -> None:
    ctx.cancel.cancel("user")
    with pytest.raises(Cancelled):
        Grep(use_rg=False).run({"pattern": "foo"}, ctx)


CATASTROPHIC = "(a|aa)*b"  # backtracks through ~fib(n) paths on a line of n 'a's


def python_children() -> set[int]:
    """Our child processes (running or zombie) that run grep's Python engine."""
    return {pid for pid in children_of(os.getpid()) if b"serve_python" in read(pid, "cmdline")}


@pytest.mark.parametrize("path", ["long.txt", "."])
def test_a_catastrophic_regex_in_the_python_engine_leaves_us_responsive(
    workspace: Path, ctx: ToolContext, path: str
) -> None:
    write(workspace, "long.txt", "a" * 42 + "\n")  # minutes of backtracking
    token: CancelToken = ctx.cancel
    ticks: list[float] = []

    def tick_then_cancel() -> None:
        while len(ticks) < 20:
            ticks.append(time.monotonic())
            time.sleep(0.01)
        token.cancel("user")

    ticker = threading.Thread(target=tick_then_cancel)
    started = time.monotonic()
    ticker.start()
    try:
        with pytest.raises(Cancelled):
            Grep(use_rg=False).run({"pattern": CATASTROPHIC, "path": path}, ctx)
    finally:
        ticker.join()
    assert time.monotonic() - started < 10
    assert ticks[-1] - ticks[0] < 5  # the ticker was never starved of the GIL
    assert python_children() == set()


def test_the_python_engine_gives_up_on_a_regex_that_runs_too_long(
    workspace: Path, ctx: ToolContext
) -> None:
    write(workspace, "long.txt", "a" * 42 + "\n")
    started = time.monotonic()
    status, text = run(Grep(use_rg=False, python_timeout=0.5), ctx, pattern=CATASTROPHIC)
    assert time.monotonic() - started < 10
    assert status == "error" and text.startswith("grep gave up after 0.5 s")
    assert python_children() == set()


@needs_rg
def test_a_single_file_is_searched_by_ripgrep(
    workspace: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    write(workspace, "long.txt", "a" * 42 + "\nab\n")
    marker = tmp_path / "ran"
    wrapper = tmp_path / "rg-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho ran >> "{marker}"\nexec "{RG}" "$@"\n')
    wrapper.chmod(0o755)
    started = time.monotonic()
    result = Grep(rg_path=str(wrapper)).run({"pattern": CATASTROPHIC, "path": "long.txt"}, ctx)
    assert marker.read_text() == "ran\n"
    assert result.text == "long.txt:2:ab"
    assert time.monotonic() - started < 5  # linear time: no backtracking


# --- grep: ripgrep and Python give the same answer -----------------------------------

PARITY_CASES: list[dict[str, Any]] = [
    {"pattern": "foo"},
    {"pattern": "FOO", "ignore_case": True},
    {"pattern": "^$"},
    {"pattern": "foo$"},
    {"pattern": r"\d+", "max_results": 5},
    {"pattern": "match", "max_results": 1},
    {"pattern": "match", "max_results": 300},
    {"pattern": "foo", "context": 2},
    {"pattern": "^foo", "context": 1, "max_results": 2},
    {"pattern": "foo", "glob": "*.py"},
    {"pattern": "foo", "glob": "*.{txt,md}"},
    {"pattern": "foo", "glob": "!*.txt"},
    {"pattern": "foo", "glob": "src/**"},
    {"pattern": "foo", "glob": "a/*.txt"},
    {"pattern": "foo", "path": "src"},
    {"pattern": "foo", "path": "build"},
    {"pattern": "foo", "path": "vendor"},
    {"pattern": "foo", "path": "crlf.txt"},
    {"pattern": "foo", "path": "a.log"},  # a file named explicitly is searched though ignored
    {"pattern": "foo", "path": "src/app.py", "glob": "*.txt"},  # and whatever the glob says
    {"pattern": "foo", "path": "src/app.py", "context": 1},
    {"pattern": "(?<=fo)o"},
    {"pattern": "caf"},
]


@needs_rg
@pytest.mark.parametrize("args", PARITY_CASES, ids=repr)
def test_ripgrep_and_python_agree(tree: Path, ctx: ToolContext, args: dict[str, Any]) -> None:
    with_rg = Grep(rg_path=RG).run(args, ctx)
    python = Grep(use_rg=False).run(args, ctx)
    assert with_rg == python
    assert with_rg.status == "success" and not with_rg.text.startswith("No matches")


@needs_rg
def test_parity_tree_exercises_the_hard_cases(tree: Path, ctx: ToolContext) -> None:
    lines = run(Grep(rg_path=RG), ctx, pattern="foo")[1].splitlines()
    assert "bad\ufffdname.txt:1:foo with odd name" in lines
    assert "x:y.txt:1:foo in x:y.txt" in lines
    assert "latin1.txt:1:caf\ufffd foo" in lines
    assert "crlf.txt:2:foo$" in lines
    assert ".config/settings.toml:1:foo in .config/settings.toml" in lines
    assert "vendor/lib/app.log:1:foo in vendor/lib/app.log" in lines
    assert not [line for line in lines if line.startswith(("link", ".git/", "a.log"))]


@needs_rg
def test_the_ripgrep_engine_really_runs(tree: Path, ctx: ToolContext, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    wrapper = tmp_path / "rg-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho ran >> "{marker}"\nexec "{RG}" "$@"\n')
    wrapper.chmod(0o755)
    result = Grep(rg_path=str(wrapper)).run({"pattern": "foo", "path": "src"}, ctx)
    assert marker.read_text() == "ran\n"
    assert result == Grep(use_rg=False).run({"pattern": "foo", "path": "src"}, ctx)


@needs_rg
def test_a_ripgrep_answer_cut_short_is_not_trusted(
    tree: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    truncating = tmp_path / "rg-dies"
    truncating.write_text(f'#!/bin/sh\n"{RG}" "$@" | head -n 3\nexit 0\n')
    truncating.chmod(0o755)
    cut_short = Grep(rg_path=str(truncating)).run({"pattern": "foo"}, ctx)
    assert cut_short == Grep(use_rg=False).run({"pattern": "foo"}, ctx)
    assert len(cut_short.text.splitlines()) > 10


def test_a_ripgrep_that_cannot_start_falls_back_to_python(tree: Path, ctx: ToolContext) -> None:
    missing = Grep(rg_path=str(tree / "no-such-rg")).run({"pattern": "foo"}, ctx)
    assert missing == Grep(use_rg=False).run({"pattern": "foo"}, ctx)
    assert "a.txt:1:foo in a.txt" in missing.text


def test_ripgrep_child_is_killed_and_reaped_on_cancel(tmp_path: Path, ctx: ToolContext) -> None:
    pid_file = tmp_path / "pid"
    stuck = tmp_path / "stuck-rg"
    stuck.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\nexec sleep 30\n')
    stuck.chmod(0o755)
    write(ctx.workspace, "a.txt", "foo\n")
    token: CancelToken = ctx.cancel

    def cancel_when_started() -> None:
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text().strip():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        token.cancel("user")

    canceller = threading.Thread(target=cancel_when_started)
    canceller.start()
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            Grep(rg_path=str(stuck)).run({"pattern": "foo"}, ctx)
    finally:
        canceller.join()
    assert time.monotonic() - started < 10
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped: no zombie left with that pid
