"""The command channel's vocabulary: user intent only (seed §3.3, §3.8).

A reply to a question the agent asked is never a command: it goes into the reply
oneshot that travelled with the question. Each command's doc names what answers it.
"""

from __future__ import annotations

import msgspec

from codecoder.kernel.messages import Message


class ProcessMessage(msgspec.Struct, frozen=True, tag="process_message", tag_field="type"):
    """The user sent a message. Answered by a turn's events, ending in exactly one Done."""

    message: Message


class Steer(msgspec.Struct, frozen=True, tag="steer", tag_field="type"):
    """Redirect the running turn without stopping it: the message joins the turn at its
    next round boundary (after the running tool call, before the next request), as a
    user message, answered by Steered. With no turn running, or when the turn ends
    before a boundary, it becomes the next turn's message (Steered{next_turn: true})."""

    message: Message


class Cancel(msgspec.Struct, frozen=True, tag="cancel", tag_field="type"):
    """Stop the running turn, any message queued behind it and any steer not yet taken
    (Ctrl+C stops everything the user asked for so far). Answered by
    Done{cancelled: true, reason: "cancelled"} for each of them; ignored when no turn runs."""


class Shutdown(msgspec.Struct, frozen=True, tag="shutdown", tag_field="type"):
    """Stop the running turn (Done{reason: "shutdown"}) and end the agent thread; the
    event stream then closes."""


class Compact(msgspec.Struct, frozen=True, tag="compact", tag_field="type"):
    """Compact the history now (`/compact`). Answered by Compacted, or by a StatusUpdate
    saying there was nothing to compact."""


AgentCommand = ProcessMessage | Steer | Cancel | Shutdown | Compact
