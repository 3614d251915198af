"""Fixtures for the file and search tools: a real workspace, a real CancelToken, and an
emit that records what the tool sent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent
from codecoder.kernel.ports import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def events() -> list[AgentEvent]:
    return []


@pytest.fixture
def ctx(workspace: Path, events: list[AgentEvent]) -> ToolContext:
    return ToolContext(
        call_id="call_1", cancel=CancelToken(), workspace=workspace, emit=events.append
    )


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode())
    return path


@pytest.fixture
def tree(workspace: Path) -> Path:
    """A git repository with every case the walkers must agree on: ignore files at several
    levels and of every kind, a nested repository, hidden, binary, non-UTF-8 and CRLF
    files, names that sort differently by bytes and by string, symlinks."""
    w = workspace
    (w / ".git" / "info").mkdir(parents=True)
    write(w, ".git/info/exclude", "excluded.txt\n")
    write(w, ".git/HEAD", "foo in git internals\n")
    write(w, ".gitignore", "*.log\n!keep.log\nbuild/\n/top_only.txt\ndocs/**/*.tmp\n")
    write(w, ".ignore", "hidden_by_dotignore.txt\n")
    for rel in (
        "excluded.txt",
        "a.log",
        "keep.log",
        "build/out.txt",
        "src/build/x.txt",
        "top_only.txt",
        "src/top_only.txt",
        "docs/a/b/c.tmp",
        "docs/readme.md",
        "hidden_by_dotignore.txt",
        ".config/settings.toml",
        "B.txt",
        "a.txt",
        "a/b.txt",
        "a-b.txt",
        "a.b",
        "é.txt",
        "x:y.txt",
        "src/app.py",
        "src/pkg/mod.py",
        "vendor/lib/app.log",
        "vendor/lib/x.gen",
    ):
        write(w, rel, f"foo in {rel}\nbar\nfoo again\n")
    write(w, "src/.gitignore", "generated.py\n")
    write(w, "src/generated.py", "foo generated\n")
    write(w, "src/pkg/generated.py", "foo generated\n")
    (w / "vendor/lib/.git").mkdir()
    write(w, "vendor/lib/.gitignore", "*.gen\n")
    write(w, "data.bin", b"foo\x00binary\n")
    write(w, "late_nul.dat", b"foo early\n" + b"filler line\n" * 30000 + b"\x00foo\n")
    write(w, "latin1.txt", "café foo\n".encode("latin-1"))
    write(w, "crlf.txt", b"foo one\r\nfoo$\r\nbar\r\n")
    write(w, "no_newline.txt", "x\nfoo at end")
    write(w, "empty.txt", "")
    write(w, "blank_lines.txt", "\n\nfoo\n\n")
    write(w, "many.txt", "".join(f"match {n}\n" for n in range(1, 301)))
    write(
        w, "ctx.txt", "".join(f"{'foo' if n in (5, 7, 20) else 'line'} {n}\n" for n in range(1, 31))
    )
    with open(os.path.join(os.fsencode(w), b"bad\xffname.txt"), "wb") as handle:
        handle.write(b"foo with odd name\n")
    (w / "link.txt").symlink_to(w / "a.txt")
    (w / "linkdir").symlink_to(w / "src")
    return w
