"""What a daemon session tells its clients beyond the kernel's events: another client
switched the approval mode, or answered a question every client was shown. RemoteAgent
(client.py) hands them out among the kernel events; the terminal client acts on them and
shows nothing. Kept apart from client.py so that the terminal client can tell them apart
without importing the daemon's client before it connects."""

from __future__ import annotations

import msgspec

from codecoder.kernel.events import AgentEvent


class ModeChanged(msgspec.Struct, frozen=True):
    """The session's approval mode is now `mode` (ACP current_mode_update)."""

    mode: str


class RequestResolved(msgspec.Struct, frozen=True):
    """The question about `tool_call_id` was answered by another client."""

    tool_call_id: str


RemoteEvent = AgentEvent | ModeChanged | RequestResolved
"""What RemoteAgent.next_event returns."""
