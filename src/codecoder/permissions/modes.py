"""Approval modes for a whole run (DESIGN.md §7; the same ids are the ACP session modes).

ask         the interactive default: what no rule allows is asked
auto-edit   file edits inside the workspace are allowed; commands ask
full-auto   everything inside the workspace is allowed; outside asks
read-only   only read tools (and run_command for plain reads) exist for the model;
            any other call is denied
never-ask   the default of headless `exec`: what would ask is denied, with a reason

Which tools the model is offered in each: RulePolicy.offers (chain.py).
"""

from __future__ import annotations

from codecoder.approval import MODES, ApprovalMode

NEEDS_A_PERSON = frozenset({"ask_user"})
"""Tools that only make sense with someone to answer: absent in never-ask runs."""


def parse_mode(text: str) -> ApprovalMode:
    """The mode named by `text`; ValueError listing the valid ids otherwise."""
    for mode in MODES:
        if text == mode:
            return mode
    raise ValueError(f"unknown approval mode {text!r}; expected one of {', '.join(MODES)}")
