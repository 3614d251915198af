"""The store's errors: each message is one line fit for the user (the CLI prints it as is)."""

from __future__ import annotations

from codecoder.kernel.ports import HistoryUnavailable


class SessionError(Exception):
    """A session could not be found, resolved, written or opened."""


class UnknownSession(SessionError, LookupError):
    """No session has that id (or id prefix)."""


class AmbiguousSession(SessionError, LookupError):
    """An id prefix matches more than one session."""


class SchemaTooNew(SessionError):
    """The file was written by a newer CodeCoder; we must not guess at its layout."""


class StoreUnavailable(SessionError, HistoryUnavailable):
    """The store's file cannot be opened or written (read-only, not a database, no room):
    nothing of the session can be kept, so a run must not go on as if it were (the agent
    loop ends the turn with its message)."""
