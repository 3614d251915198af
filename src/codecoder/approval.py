"""The approval modes' ids (DESIGN.md §7; the same ids are the ACP session modes) and
nothing else: what a command line and the ACP handler offer, importable without the
permission machinery, which `codecoder acp` does not load before its first session
(importing any module of `permissions/` runs its package, the rule chain and the shell
parser: ~40 ms). What each mode does: permissions/modes.py."""

from __future__ import annotations

from typing import Literal, get_args

ApprovalMode = Literal["ask", "auto-edit", "full-auto", "read-only", "never-ask"]
MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
