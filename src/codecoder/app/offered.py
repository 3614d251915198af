"""OfferedTools: the toolbox as the approval mode offers it, request by request.

A session offers the model only the tools a call of which could run (RulePolicy.offers):
in read-only no edit tool, where nobody answers no `ask_user`. The mode can change during
a session (a client's `session/set_mode`, the terminal client's Shift+Tab), so the set is
a ToolSource the loop asks before each request, not the fixed toolbox: switched from
read-only to auto-edit, the next request offers `edit_file` again, and the prompt names
it (SessionFacts.tools). The set is computed again on each request (a dozen rule checks)
and handed back as the same object while it is the same, so the loop rebuilds its specs
only on a change. A source behind it (MCP servers, hook notices) adds its tools after
ours, so none of its tools can take a built-in tool's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.ports import Tool, ToolSource
from codecoder.permissions.chain import RulePolicy


class OfferedTools:
    """The kernel's ToolSource for a session's own tools, then `inner`'s."""

    def __init__(self, every: Sequence[Tool], policy: RulePolicy, *, attended: bool) -> None:
        self._every = tuple(every)
        self._policy = policy
        self._attended = attended
        self.inner: ToolSource | None = None
        """Set once the session's other sources exist (build_agent)."""
        self._names: frozenset[str] = frozenset()
        self._inner_tools: Sequence[Tool] | None = None
        self._offered: Sequence[Tool] = ()
        self.tools()

    def names(self) -> frozenset[str]:
        """The built-in tools offered now (the prompt names only those)."""
        return frozenset(t.name for t in self._every if self._offers(t))

    def tools(self) -> Sequence[Tool]:
        ours = [tool for tool in self._every if self._offers(tool)]
        names = frozenset(tool.name for tool in ours)
        theirs = self.inner.tools() if self.inner is not None else ()
        if names != self._names or theirs is not self._inner_tools:
            self._names, self._inner_tools = names, theirs
            self._offered = (*ours, *theirs)
        return self._offered

    def notices(self) -> Sequence[StatusUpdate]:
        return self.inner.notices() if self.inner is not None else ()

    def _offers(self, tool: Tool) -> bool:
        return self._policy.offers(tool, attended=self._attended)
