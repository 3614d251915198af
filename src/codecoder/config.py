"""Layered TOML settings: user config, then the project's (DESIGN.md §7).

Each feature reads its own table (`[providers.*]`, `[permissions]`, `[compaction]`,
`[subagents]` …) from the layers it trusts; this module only finds and parses files,
and reports a broken file as one clear ConfigError.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import msgspec

from codecoder import paths


class ConfigError(Exception):
    """A configuration file could not be read or has a wrong value (exit code 2)."""


def read_toml(path: Path) -> dict[str, Any]:
    """The file's table, {} when it does not exist."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from exc


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
    user = read_toml(paths.config_dir() / "config.toml")
    if not trusted:
        return Layers(user=user, project={}, project_local={})
    project = paths.project_dir(workspace)
    return Layers(
        user=user,
        project=read_toml(project / "config.toml"),
        project_local=read_toml(project / "config.local.toml"),
    )
