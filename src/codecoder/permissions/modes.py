"""Approval modes for a whole run (DESIGN.md §7; the same ids are the ACP session modes).

ask         the interactive default: what no rule allows is asked
auto-edit   file edits inside the workspace are allowed; commands ask
full-auto   everything inside the workspace is allowed; outside asks
read-only   only read tools (and run_command for plain reads) exist for the model;
            any other call is denied
never-ask   the default of headless `exec`: what would ask is denied, with a reason
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from codecoder.approval import MODES, ApprovalMode
from codecoder.kernel.ports import Tool

T = TypeVar("T", bound=Tool)

NEEDS_A_PERSON = frozenset({"ask_user"})
"""Tools that only make sense with someone to answer: absent in never-ask runs."""


def parse_mode(text: str) -> ApprovalMode:
    """The mode named by `text`; ValueError listing the valid ids otherwise."""
    for mode in MODES:
        if text == mode:
            return mode
    raise ValueError(f"unknown approval mode {text!r}; expected one of {', '.join(MODES)}")


READ_ONLY_EXTRAS = frozenset({"run_command"})
"""Tools offered in read-only mode although they may write: the policy lets through only
what reads (a command on the built-in read-only list)."""


def filter_tools(tools: Iterable[T], mode: ApprovalMode) -> list[T]:
    """The tools the model is shown: in read-only mode only those that merely read (and
    run_command, for plain reads); in never-ask mode none that waits for a person."""
    if mode == "read-only":
        return [tool for tool in tools if tool.risk == "read" or tool.name in READ_ONLY_EXTRAS]
    if mode == "never-ask":
        return [tool for tool in tools if tool.name not in NEEDS_A_PERSON]
    return list(tools)
