"""The bwrap command line and what it is built from (no bwrap needed): the order of the
mounts, the protected folders a workspace scan finds, the masked places, the network."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec
import pytest

from codecoder.sandbox import wrap_argv
from codecoder.sandbox.bwrap import Confinement, Layout, build_argv, runtime_under_tmp
from codecoder.sandbox.layout import FRESH_NS, FolderScan, Mask, masks


def mounts(argv: list[str]) -> list[tuple[str, ...]]:
    """The mount operations of a bwrap line, in order, each with its operands."""
    arity = {"--ro-bind": 2, "--bind": 2, "--tmpfs": 1, "--dev": 1, "--proc": 1}
    found: list[tuple[str, ...]] = []
    index = 1
    while argv[index] != "--":
        word = argv[index]
        if word in arity:
            found.append((word, *argv[index + 1 : index + 1 + arity[word]]))
            index += 1 + arity[word]
        elif word in ("--perms", "--chdir"):
            index += 2
        elif word == "--setenv":
            index += 3
        else:
            index += 1
    return found


def test_the_root_is_read_only_and_the_workspace_and_tmp_writable() -> None:
    confinement = Confinement("workspace-write", Path("/w"), bwrap="/usr/bin/bwrap")
    argv = build_argv(confinement, Layout(("/w",)), ["bash", "-c", "x"], "/w/src")
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-4:] == ["--", "bash", "-c", "x"]
    assert mounts(argv) == [
        ("--ro-bind", "/", "/"),
        ("--dev", "/dev"),
        ("--proc", "/proc"),
        ("--tmpfs", "/tmp"),
        ("--bind", "/w", "/w"),
    ]
    for flag in ("--unshare-pid", "--die-with-parent", "--new-session", "--unshare-net"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--chdir") + 1] == "/w/src"


def test_a_workspace_under_tmp_is_bound_after_the_private_tmp() -> None:
    confinement = Confinement("workspace-write", Path("/tmp/p/w"))
    found = mounts(build_argv(confinement, Layout(("/tmp/p/w",)), ["true"], "/tmp/p/w"))
    assert found.index(("--bind", "/tmp/p/w", "/tmp/p/w")) > found.index(("--tmpfs", "/tmp"))


def test_our_runtime_under_tmp_is_bound_back_read_only_before_the_workspace() -> None:
    confinement = Confinement("workspace-write", Path("/tmp/p/w"))
    layout = Layout(("/tmp/p/w",), runtime=("/tmp/venv",))
    found = mounts(build_argv(confinement, layout, ["true"], "/tmp/p/w"))
    tmp = found.index(("--tmpfs", "/tmp"))
    assert found[tmp + 1] == ("--ro-bind", "/tmp/venv", "/tmp/venv")
    assert found.index(("--bind", "/tmp/p/w", "/tmp/p/w")) > tmp + 1


def test_runtime_under_tmp_names_only_our_prefixes_and_module_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real paths strictly below /tmp, outermost only, that exist: a module folder inside
    the venv is the venv; /tmp itself, a symlink leading out of /tmp, a folder that is
    gone and the import path (the current folder of `python -m`) are never named."""
    import codecoder

    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    (venv / "lib" / "codecoder").mkdir(parents=True)
    checkout = tmp_path / "checkout"
    (checkout / "src" / "msgspec").mkdir(parents=True)
    (tmp_path / "out").symlink_to("/")
    monkeypatch.setattr("sys.prefix", str(venv))
    monkeypatch.setattr("sys.exec_prefix", str(tmp_path / "out"))
    monkeypatch.setattr("sys.base_prefix", "/tmp")
    monkeypatch.setattr(codecoder, "__file__", str(venv / "lib" / "codecoder" / "__init__.py"))
    monkeypatch.setattr(msgspec, "__file__", str(checkout / "src" / "msgspec" / "__init__.py"))
    monkeypatch.setattr("sys.path", [str(tmp_path / "cwd"), str(tmp_path), ""])
    assert sorted(runtime_under_tmp()) == [str(checkout / "src"), str(venv)]
    monkeypatch.setattr(msgspec, "__file__", str(tmp_path / "gone" / "msgspec" / "x.py"))
    assert runtime_under_tmp() == (str(venv),)


def test_read_only_mode_binds_the_workspace_read_only_and_nothing_writable() -> None:
    confinement = Confinement("read-only", Path("/tmp/w"))
    layout = Layout(("/tmp/w",), protected=("/tmp/w/.git",))
    found = mounts(build_argv(confinement, layout, ["true"], "/tmp/w"))
    assert ("--ro-bind", "/tmp/w", "/tmp/w") in found
    assert not [m for m in found if m[0] == "--bind"]


def test_read_only_mode_shows_the_extra_roots_read_only(tmp_path: Path) -> None:
    """A session's extra roots under /tmp would vanish behind the private /tmp; a line
    run read-only in a workspace-write session (tools/shell.py) may start in one."""
    ws, extra, gone = tmp_path / "ws", tmp_path / "extra", tmp_path / "gone"
    ws.mkdir()
    extra.mkdir()
    confinement = Confinement("read-only", ws, extra_roots=(extra, gone))
    argv = confinement.wrap(["true"], cwd=extra)
    found = mounts(argv)
    assert ("--ro-bind", str(extra), str(extra)) in found
    assert not [m for m in found if m[0] == "--bind"]
    assert argv[argv.index("--chdir") + 1] == str(extra)
    assert str(gone) not in argv  # removed since: bwrap would refuse the whole line


def test_tmpdir_is_set_to_the_private_tmp_wherever_it_could_not_be_written() -> None:
    """Read-only where the sandbox binds something read-only over /tmp's or a root's
    place: a workspace under /tmp in read-only mode, a protected entry, our runtime."""

    def resets(mode: str, layout: Layout, tmpdir: str) -> bool:
        confinement = Confinement(mode, Path(layout.roots[0]))  # type: ignore[arg-type]
        return "--setenv" in build_argv(confinement, layout, ["true"], "/", tmpdir=tmpdir)

    under_tmp = Layout(("/tmp/w",), protected=("/tmp/w/.git",), runtime=("/tmp/venv",))
    assert resets("read-only", under_tmp, "/tmp/w/.tmp")
    assert not resets("workspace-write", under_tmp, "/tmp/w/.tmp")
    assert resets("workspace-write", under_tmp, "/tmp/w/.git/tmp")
    assert resets("workspace-write", under_tmp, "/tmp/venv/tmp")
    assert not resets("read-only", under_tmp, "/tmp/elsewhere")


def test_protected_entries_and_masks_come_after_the_writable_bind() -> None:
    confinement = Confinement("workspace-write", Path("/home/u"), network=True)
    layout = Layout(
        ("/home/u",),
        protected=("/home/u/.git", "/home/u/sub/bare"),
        masks=(Mask("/home/u/.ssh", "dir"), Mask("/home/u/.netrc", "file")),
    )
    argv = build_argv(confinement, layout, ["true"], "/home/u")
    found = mounts(argv)
    bind = found.index(("--bind", "/home/u", "/home/u"))
    assert found.index(("--ro-bind", "/home/u/.git", "/home/u/.git")) > bind
    assert found.index(("--ro-bind", "/home/u/sub/bare", "/home/u/sub/bare")) > bind
    assert found.index(("--tmpfs", "/home/u/.ssh")) > bind
    assert found.index(("--ro-bind", "/dev/null", "/home/u/.netrc")) > bind
    tmpfs = argv.index("/home/u/.ssh") - 1
    assert argv[tmpfs - 2 : tmpfs] == ["--perms", "0000"]  # a folder nobody can open
    assert "--unshare-net" not in argv


def test_a_workspace_inside_a_masked_folder_shows_through_it() -> None:
    confinement = Confinement("workspace-write", Path("/home/u/.config/x"))
    layout = Layout(("/home/u/.config/x",), masks=(Mask("/home/u/.config", "dir"),))
    found = mounts(build_argv(confinement, layout, ["true"], "/home/u/.config/x"))
    assert found.index(("--tmpfs", "/home/u/.config")) < found.index(
        ("--bind", "/home/u/.config/x", "/home/u/.config/x")
    )


def test_tmpdir_outside_the_writable_places_points_to_the_private_tmp() -> None:
    confinement = Confinement("workspace-write", Path("/w"))
    argv = build_argv(confinement, Layout(("/w",)), ["true"], "/w", tmpdir="/var/folders/x")
    assert argv[argv.index("--setenv") + 1 : argv.index("--setenv") + 3] == ["TMPDIR", "/tmp"]
    inside = build_argv(confinement, Layout(("/w",)), ["true"], "/w", tmpdir="/w/.tmp")
    assert "--setenv" not in inside


def test_off_leaves_the_argv_alone(tmp_path: Path) -> None:
    assert wrap_argv(["make", "test"], "off", tmp_path) == ["make", "test"]


# --- the scan ---------------------------------------------------------------------------


def make_bare(folder: Path) -> None:
    """A folder with the marks of a git directory (a planted bare repository)."""
    (folder / "objects").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text("[core]\n\tbare = true\n")


def test_the_scan_finds_every_protected_entry(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".codecoder").mkdir()
    make_bare(ws / "deep" / "planted")
    subprocess.run(["git", "init", "-q", str(ws / "vendor" / "lib")], check=True)
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../.git/worktrees/sub\n")  # a worktree's file
    (ws / "odd" / ".GIT").mkdir(parents=True)
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "refs").mkdir()  # one mark alone is no git directory
    (ws / "hooks").mkdir()
    (ws / "out").symlink_to(tmp_path)  # links are not followed
    found = FolderScan().protected(ws, hooks=[ws / "hooks", tmp_path / "elsewhere"])
    expected = [
        ".codecoder",
        ".git",
        "deep/planted",
        "hooks",
        "odd/.GIT",
        "sub/.git",
        "vendor/lib/.git",
    ]
    assert found == [str(ws / rel) for rel in expected]


def test_a_later_scan_lists_only_changed_folders_and_sees_a_new_repository(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    for rel in ("a/b/c", "d/e", "f"):
        (ws / rel).mkdir(parents=True)
    old = 1_000_000_000  # mtimes far in the past: the listings may be trusted
    for folder in (ws, ws / "a", ws / "a/b", ws / "a/b/c", ws / "d", ws / "d/e", ws / "f"):
        os.utime(folder, ns=(old, old))
    scan = FolderScan()
    assert scan.protected(ws) == []
    assert scan.listed == 7
    assert scan.protected(ws) == []
    assert scan.listed == 7  # nothing changed: one stat per folder, no listing
    make_bare(ws / "a" / "b" / "new")
    assert scan.protected(ws) == [str(ws / "a" / "b" / "new")]
    assert scan.listed == 8 + 1  # a/b changed (relisted) and the new folder


def test_a_folder_changed_just_before_a_scan_is_listed_again(tmp_path: Path) -> None:
    """File times are coarse: a listing in the same tick as a change may miss it, so a
    folder younger than FRESH_NS is never trusted from the cache."""
    ws = tmp_path / "ws"
    ws.mkdir()
    scan = FolderScan()
    scan.protected(ws)
    scan.protected(ws)
    assert scan.listed == 2
    assert FRESH_NS >= 1_000_000_000


def test_masks_are_the_credential_places_that_exist(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x login y password z\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / "real-aws").mkdir()
    (home / ".aws").symlink_to(home / "real-aws")
    config = home / ".config" / "codecoder"
    config.mkdir()
    found = masks(home, config_dir=config, data_dir=home / "nothing", runtime_dir=None)
    found = [mask for mask in found if mask.path.startswith(f"{home}/")]  # not /run's
    assert found == sorted(
        [
            Mask(str(home / ".config" / "codecoder"), "dir"),
            Mask(str(home / ".config" / "gh"), "dir"),
            Mask(str(home / ".netrc"), "file"),
            Mask(str(home / ".ssh"), "dir"),
            Mask(str(home / "real-aws"), "dir"),  # what the link points to
        ]
    )


def test_a_mask_inside_another_is_dropped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "gh").mkdir(parents=True)
    found = masks(home, config_dir=home / ".config", data_dir=home / "x", runtime_dir=None)
    assert [mask for mask in found if mask.path.startswith(f"{home}/")] == [
        Mask(str(home / ".config"), "dir")
    ]


@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
def test_wrap_masks_the_config_folder_and_binds_the_workspace(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "codecoder"
    config.mkdir(parents=True, exist_ok=True)
    confinement = Confinement(mode, ws)  # type: ignore[arg-type]
    found = mounts(confinement.wrap(["true"]))
    bind = "--bind" if mode == "workspace-write" else "--ro-bind"
    assert (bind, str(ws), str(ws)) in found
    assert ("--tmpfs", str(config)) in found
    assert (("--ro-bind", str(ws / ".git"), str(ws / ".git")) in found) == (
        mode == "workspace-write"
    )


def test_a_dangling_protected_link_is_left_out(tmp_path: Path) -> None:
    """bwrap cannot bind what a dangling link names: keeping it would fail every command."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".codecoder").symlink_to(tmp_path / "nowhere")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").symlink_to(ws / "real-git")
    (ws / "real-git").mkdir()
    assert FolderScan().protected(ws) == [str(ws / "sub" / ".git")]
