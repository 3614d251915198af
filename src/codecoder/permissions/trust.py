"""Which folders' `.codecoder/` settings are applied (`$XDG_CONFIG_HOME/codecoder/trusted.toml`).

A repository is untrusted input: its `.codecoder/config.toml` could grant the agent any
right. So project settings apply only to a folder the user has trusted, recorded by real
path (a symlink to a trusted folder is the same folder; a copy elsewhere is not). Trust
is per folder, not inherited by subfolders: trust the folder you run in.
"""

from __future__ import annotations

from pathlib import Path

from codecoder import paths
from codecoder.config import ConfigError, read_toml


def trusted_file() -> Path:
    return paths.config_dir() / "trusted.toml"


def trusted_folders() -> tuple[str, ...]:
    source = trusted_file()
    folders = read_toml(source).get("folders", [])
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):  # type: ignore[union-attr]
        raise ConfigError(f"{source}: `folders` must be a list of paths")
    return tuple(folders)  # type: ignore[arg-type]


def is_trusted(workspace: Path) -> bool:
    return str(workspace.resolve()) in trusted_folders()


def trust(workspace: Path) -> None:
    """Record the folder as trusted (idempotent); the file is rewritten atomically."""
    from codecoder.permissions.tomlfile import atomic_write, toml_string

    folders = trusted_folders()
    real = str(workspace.resolve())
    if real in folders:
        return
    lines = "".join(f"    {toml_string(folder)},\n" for folder in (*folders, real))
    text = (
        "# Folders whose .codecoder/ settings CodeCoder applies (real paths).\n"
        f"folders = [\n{lines}]\n"
    )
    atomic_write(trusted_file(), text)
