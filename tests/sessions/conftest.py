"""Fixtures for the session store tests: a real SQLite file under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.sessions.store import SessionStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sessions.sqlite3"


@pytest.fixture
def store(db: Path) -> Iterator[SessionStore]:
    with SessionStore(db) as opened:
        yield opened


@pytest.fixture
def xdg_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point XDG_DATA_HOME at tmp_path, as a user's environment would; returns the db path."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "codecoder" / "sessions.sqlite3"
