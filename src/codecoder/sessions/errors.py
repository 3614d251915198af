"""The store's errors: each message is one line fit for the user (the CLI prints it as is)."""

from __future__ import annotations


class SessionError(Exception):
    """A session could not be found, resolved, written or opened."""


class UnknownSession(SessionError, LookupError):
    """No session has that id (or id prefix)."""


class AmbiguousSession(SessionError, LookupError):
    """An id prefix matches more than one session."""


class SchemaTooNew(SessionError):
    """The file was written by a newer CodeCoder; we must not guess at its layout."""
