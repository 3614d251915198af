"""Sessions that are never lost: the SQLite store, its schema, and history repair.

`SessionStore` keeps sessions and messages (one transaction per message, WAL, shared by
threads and processes); `SessionLog` is the kernel's HistorySink for one session;
`repair` makes a stored history valid for a provider again after a crash.
"""

from codecoder.sessions.errors import (
    AmbiguousSession,
    SchemaTooNew,
    SessionError,
    StoreUnavailable,
    UnknownSession,
)
from codecoder.sessions.records import SessionInfo
from codecoder.sessions.repair import InvalidHistory, check_valid, problems, repair
from codecoder.sessions.store import SessionLog, SessionStore

__all__ = [
    "AmbiguousSession",
    "InvalidHistory",
    "SchemaTooNew",
    "SessionError",
    "SessionInfo",
    "SessionLog",
    "SessionStore",
    "StoreUnavailable",
    "UnknownSession",
    "check_valid",
    "problems",
    "repair",
]
