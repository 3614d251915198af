"""What the terminal client's tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.terminal import Terminal


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Terminals a test opens; each is closed and checked at the end (nothing of its
    session left running)."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()
