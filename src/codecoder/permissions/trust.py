"""Which folders' `.codecoder/` settings are applied (`$XDG_CONFIG_HOME/codecoder/trusted.toml`).

A repository is untrusted input: its `.codecoder/config.toml` could grant the agent any
right. So project settings apply only to a folder the user has trusted, recorded by real
path (a symlink to a trusted folder is the same folder; a copy elsewhere is not). Trust
is per folder, not inherited by subfolders: trust the folder you run in.

`codecoder trust [DIR]` and `codecoder untrust [DIR]` edit the file; by hand it reads

    folders = [
        "/home/me/src/project",
    ]
"""

from __future__ import annotations

from pathlib import Path

from codecoder import paths
from codecoder.config import read_toml


def trusted_file() -> Path:
    return paths.config_dir() / "trusted.toml"


def trusted_folders() -> tuple[str, ...]:
    return tuple(read_toml(trusted_file(), "trusted").get("folders", []))


def is_trusted(workspace: Path) -> bool:
    return str(workspace.resolve()) in trusted_folders()


def trust(workspace: Path) -> bool:
    """Record the folder as trusted; False when it already was. The file is rewritten
    atomically."""
    folders = trusted_folders()
    real = str(workspace.resolve())
    if real in folders:
        return False
    _write((*folders, real))
    return True


def untrust(workspace: Path) -> bool:
    """Forget the folder; False when it was not trusted."""
    folders = trusted_folders()
    real = str(workspace.resolve())
    if real not in folders:
        return False
    _write(tuple(folder for folder in folders if folder != real))
    return True


def _write(folders: tuple[str, ...]) -> None:
    from codecoder.permissions.tomlfile import atomic_write, toml_string

    lines = "".join(f"    {toml_string(folder)},\n" for folder in folders)
    text = (
        "# Folders whose .codecoder/ settings CodeCoder applies (real paths).\n"
        "# Edit with `codecoder trust DIR` and `codecoder untrust DIR`.\n"
        f"folders = [\n{lines}]\n"
    )
    atomic_write(trusted_file(), text)
