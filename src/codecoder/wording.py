"""Small helpers for messages that read as English."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`counted(1, "line")` → "1 line", `counted(3, "line")` → "3 lines"."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
