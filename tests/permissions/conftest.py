"""Fixtures of the permission tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import World, make_world


@pytest.fixture
def world(tmp_path: Path, isolated_home: Path) -> World:
    return make_world(tmp_path, isolated_home)
