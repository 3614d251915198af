"""Layered TOML settings: user config, then the project's (DESIGN.md §7).

Each feature reads its own table (`[providers.*]`, `[permissions]`, `[compaction]`,
`[subagents]` …) from the layers it trusts; this module finds, reads and parses the
files, checks each against the schema (config_schema: one place declares every table),
and reports a broken file as one clear ConfigError naming the file and the line.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import msgspec

from codecoder import paths

Schema = Literal["config", "trusted"]


class ConfigError(Exception):
    """A configuration file could not be read or has a wrong value (exit code 2)."""


def read_toml(path: Path, schema: Schema | None = "config") -> dict[str, Any]:
    """The file's table, {} when it does not exist. `schema`: what the file must follow
    (a `config.toml` by default; None reads any TOML)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    if schema is not None and table:
        _check(table, text, path, schema)
    return table


def _check(table: dict[str, Any], text: str, path: Path, schema: Schema) -> None:
    from codecoder import config_schema

    root = config_schema.Config if schema == "config" else config_schema.TrustedFile
    try:
        config_schema.check(table, text, str(path), root)
    except config_schema.SchemaError as exc:
        raise ConfigError(str(exc)) from None


def user_config() -> dict[str, Any]:
    """`$XDG_CONFIG_HOME/codecoder/config.toml`, checked ({} when there is none)."""
    return read_toml(paths.config_dir() / "config.toml")


class Layers(msgspec.Struct, frozen=True):
    """The raw tables of each level; `project` is empty unless the folder is trusted."""

    user: dict[str, Any]
    project: dict[str, Any]
    project_local: dict[str, Any]

    def merged(self) -> dict[str, Any]:
        """User settings overlaid by project ones (tables merge, other values replace)."""
        result: dict[str, Any] = {}
        for layer in (self.user, self.project, self.project_local):
            _merge(result, layer)
        return result


def _merge(into: dict[str, Any], layer: dict[str, Any]) -> None:
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)  # type: ignore[arg-type]
        else:
            into[key] = value


def load_layers(workspace: Path, *, trusted: bool) -> Layers:
    user = user_config()
    if not trusted:
        return Layers(user=user, project={}, project_local={})
    project = paths.project_dir(workspace)
    return Layers(
        user=user,
        project=read_toml(project / "config.toml"),
        project_local=read_toml(project / "config.local.toml"),
    )
