"""Permissions: which tool calls run, which ask the user, which are refused.

`RulePolicy` implements `kernel.ports.PermissionPolicy` with the four-level chain of
DESIGN.md §5 (chain.py); rules.py is the rule syntax, shell.py the command parser
(words.py: the wrappers it sees through), fullauto.py what full-auto still asks about,
modes.py the approval modes, trust.py the trusted folders and their approved allow rules.
docs/permissions.md is the user's guide.
"""

from codecoder.permissions.chain import RulePolicy
from codecoder.permissions.modes import MODES, ApprovalMode, parse_mode
from codecoder.permissions.trust import is_trusted, trust

__all__ = [
    "MODES",
    "ApprovalMode",
    "RulePolicy",
    "is_trusted",
    "parse_mode",
    "trust",
]
