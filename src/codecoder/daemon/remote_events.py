"""What a daemon session tells its clients beyond the kernel's events: another client
switched the approval mode, answered a question every client was shown, sent a message,
or started a turn this client did not prompt. RemoteAgent (client.py) hands them out
among the kernel events; the terminal client acts on them. Kept apart from client.py so
that the terminal client can tell them apart without importing the daemon's client
before it connects."""

from __future__ import annotations

from typing import Literal

import msgspec

from codecoder.kernel.events import AgentEvent


class ModeChanged(msgspec.Struct, frozen=True):
    """The session's approval mode is now `mode` (ACP current_mode_update)."""

    mode: str


class RequestResolved(msgspec.Struct, frozen=True):
    """The question about `tool_call_id` was answered by another client."""

    tool_call_id: str


class Prompted(msgspec.Struct, frozen=True):
    """Another client's message, `client` naming who sent it: a prompt (`steer` empty;
    its turn starts now), or a steer that `joined` the running turn or waits for the
    `next_turn`. Every client of a session sees the whole conversation."""

    text: str
    client: str
    steer: Literal["", "joined", "next_turn"] = ""


class TurnRunning(msgspec.Struct, frozen=True):
    """A turn this client did not prompt runs (another client's, or one a steer made, or
    the one running when it attached): the client is busy until its Done."""


RemoteEvent = AgentEvent | ModeChanged | RequestResolved | Prompted | TurnRunning
"""What RemoteAgent.next_event returns."""
