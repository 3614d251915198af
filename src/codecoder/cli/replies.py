"""Answers to the agent's questions read from standard input (`exec --stdin-replies`).

One JSON object per line: `{"type": "reply", "request_id": …, "decision": "allow_once |
allow_session | allow_project | deny | deny_session", "message": …}` for a ConfirmRequest,
`{"type": "reply", "request_id": …, "answer": …}` for an AskUser, and `{"type": "steer",
"text": …}` to steer the running turn. Each answer goes into the oneshot that travelled
with the question; EOF means deny (and no answer) for every question still open and
every later one.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import IO, Any, get_args

import msgspec

from codecoder.kernel.events import ConfirmReply, ConfirmRequest, Decision
from codecoder.kernel.oneshot import Oneshot

_DECISIONS: tuple[Decision, ...] = get_args(Decision)
EOF_ANSWER = "(no answer: standard input closed)"


class StdinReplies:
    def __init__(self, stream: IO[str], on_steer: Callable[[str], object] | None = None) -> None:
        self._stream = stream
        self._on_steer = on_steer
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Oneshot[Any], bool]] = {}
        self._early: dict[str, dict[str, Any]] = {}
        self._eof = False
        self._thread = threading.Thread(target=self._read, name="stdin-replies", daemon=True)
        self._thread.start()

    def expect(self, event: ConfirmRequest | Any) -> None:
        """Register a question; answer it at once if its reply already arrived."""
        confirm = isinstance(event, ConfirmRequest)
        with self._lock:
            early = self._early.pop(event.reply.request_id, None)
            if early is None and not self._eof:
                self._open[event.reply.request_id] = (event.reply, confirm)
                return
        _answer(event.reply, confirm, early)

    def _read(self) -> None:
        for line in self._stream:
            if not line.strip():
                continue
            try:
                record = msgspec.json.decode(line)
                if record.get("type") == "steer" and isinstance(record.get("text"), str):
                    if self._on_steer is not None:
                        self._on_steer(record["text"])
                    continue
                request_id = str(record["request_id"])
            except (msgspec.DecodeError, KeyError, TypeError, AttributeError):
                print(
                    f"codecoder: ignored a malformed reply line: {line.strip()[:120]}",
                    file=sys.stderr,
                )
                continue
            with self._lock:
                waiting = self._open.pop(request_id, None)
                if waiting is None:
                    self._early[request_id] = record
                    continue
            _answer(waiting[0], waiting[1], record)
        with self._lock:
            self._eof = True
            waiting_all = list(self._open.values())
            self._open.clear()
        for reply, confirm in waiting_all:
            _answer(reply, confirm, None)


def _answer(reply: Oneshot[Any], confirm: bool, record: dict[str, Any] | None) -> None:
    if confirm:
        decision = record.get("decision") if record else "deny"
        if decision not in _DECISIONS:
            decision = "deny"
        message = record.get("message") if record else "standard input closed"
        reply.send(
            ConfirmReply(decision, message if isinstance(message, str) else None), by="stdin"
        )
    else:
        answer = record.get("answer") if record else None
        reply.send(answer if isinstance(answer, str) else EOF_ANSWER, by="stdin")
