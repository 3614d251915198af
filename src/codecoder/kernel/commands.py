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


class Cancel(msgspec.Struct, frozen=True, tag="cancel", tag_field="type"):
    """Stop the running turn and any message queued behind it (Ctrl+C stops everything
    the user asked for so far). Answered by Done{cancelled: true, reason: "cancelled"}
    for each of them; ignored when no turn runs."""


class Shutdown(msgspec.Struct, frozen=True, tag="shutdown", tag_field="type"):
    """Stop the running turn (Done{reason: "shutdown"}) and end the agent thread; the
    event stream then closes."""


class Compact(msgspec.Struct, frozen=True, tag="compact", tag_field="type"):
    """Compact the history now (`/compact`). Answered by Compacted, or by a StatusUpdate
    saying there was nothing to compact."""


AgentCommand = ProcessMessage | Cancel | Shutdown | Compact
