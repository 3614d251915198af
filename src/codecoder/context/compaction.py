"""Compaction on its own thread (issue 5, DESIGN.md §5).

The compactor follows token use (the provider's reported usage after each request, an
estimate for what was added since). Past a threshold of the model's context window it
summarises the older history through the provider on its own thread, so the agent never
waits for it; the loop swaps its view to summary + recent tail at the next round boundary.
The cut never separates a tool call from its result: the tail starts at a user or
assistant message. Nothing is deleted; the store keeps the full history.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from queue import SimpleQueue
from typing import Any

import msgspec

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Usage
from codecoder.kernel.messages import Message, Text
from codecoder.kernel.oneshot import Oneshot
from codecoder.kernel.ports import (
    CompactedView,
    ProviderClient,
    ProviderError,
    ProviderRequest,
    TextDelta,
)
from codecoder.kernel.reply import capped

SUMMARY_HEADER = "[Summary of the earlier conversation, written when the context was compacted]"
SUMMARY_SYSTEM = (
    "You summarise a coding agent's session so that the agent can continue it with only "
    "your summary and the most recent messages. Keep what the work needs: the user's "
    "goals and constraints, decisions made, files read or changed (paths), commands run "
    "and their outcomes, errors still open, and what was about to happen next. Be "
    "specific and concise; no preamble."
)
SUMMARY_REQUEST = "Summarise the conversation above, following your instructions."

DEFAULT_WINDOW = 128_000
WINDOWS = {
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3": 200_000,
    "gpt-5": 400_000,
    "gpt-4.1": 1_000_000,
    "gpt-4o": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "deepseek": 128_000,
    "qwen3-coder": 256_000,
}


_Job = tuple[list[Message], int, "Oneshot[CompactedView | None] | None"]


def context_window(model: str, config: dict[str, Any] | None = None) -> int:
    """The model's window: `[models."provider/model"] context_window` in config first,
    then the longest matching prefix of the built-in table, else DEFAULT_WINDOW."""
    table = (config or {}).get("models", {})
    entry = table.get(model) if isinstance(table, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("context_window"), int):
        return entry["context_window"]
    name = model.rsplit("/", 1)[-1]
    matches = [prefix for prefix in WINDOWS if name.startswith(prefix)]
    return WINDOWS[max(matches, key=len)] if matches else DEFAULT_WINDOW


def estimate_tokens(message: Message) -> int:
    """About four bytes of JSON per token: good enough to decide when to compact."""
    return len(msgspec.json.encode(message)) // 4 + 4


class ThreadedCompactor:
    """Implements kernel.ports.Compactor with one worker thread (started on first use,
    stopped by close())."""

    def __init__(
        self,
        provider: ProviderClient,
        *,
        window: int,
        threshold: float = 0.8,
        keep_fraction: float = 0.25,
    ) -> None:
        self.provider = provider
        self.window = window
        self.threshold = threshold
        self.keep_tokens = max(1, int(window * keep_fraction))
        self._lock = threading.Lock()
        self._estimates: dict[int, int] = {}
        self._jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stop = CancelToken()
        self._pending = False
        self._idle = threading.Event()
        self._idle.set()
        self._ready: CompactedView | None = None
        self.last_error: str | None = None
        self.before: Callable[[str, int], str | None] | None = None
        """Asked before each summary is made (the pre_compact hooks: hooks/bridge.py)
        with the trigger (`auto`: the threshold; `manual`: /compact or a context-length
        error) and the tokens; a reason skips that compaction."""

    # --- the Compactor protocol -----------------------------------------------------

    def observe(self, view: Sequence[Message], usage: Usage | None) -> None:
        tokens = self.tokens(view, usage)
        if tokens < self.threshold * self.window:
            return
        with self._lock:
            if self._pending or self._ready is not None:
                return
            self._pending = True
            self._idle.clear()
        if not self._submit(list(view), tokens, None):
            with self._lock:
                self._pending = False
                self._idle.set()

    def ready(self) -> CompactedView | None:
        with self._lock:
            view, self._ready = self._ready, None
            return view

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no background summary is being prepared."""
        return self._idle.wait(timeout)

    def compact_now(self, view: Sequence[Message], cancel: CancelToken) -> CompactedView | None:
        reply: Oneshot[CompactedView | None] = Oneshot()
        if not self._submit(list(view), self.tokens(view, None), reply):
            return None
        return reply.recv(cancel=cancel)

    # --- the worker -----------------------------------------------------------------

    def tokens(self, view: Sequence[Message], usage: Usage | None) -> int:
        """Reported usage for what was sent, plus an estimate for anything newer."""
        if usage is not None and usage.input_tokens:
            return usage.input_tokens + usage.output_tokens
        return sum(self._estimate(m) for m in view)

    def _submit(
        self, view: list[Message], tokens: int, reply: Oneshot[CompactedView | None] | None
    ) -> bool:
        """Queue a job; a job without a reply is a background one, picked up by ready()."""
        if cut_point(view, self.keep_tokens, self._estimate) is None:
            return False
        self._start()
        self._jobs.put((view, tokens, reply))
        return True

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="compaction", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            view, tokens, reply = job
            try:
                result = self._prepare(view, tokens, "auto" if reply is None else "manual")
            except Exception as exc:  # whatever fails, the waiter gets its answer
                self.last_error = getattr(exc, "message", None) or repr(exc)
                result = None
            if reply is not None:
                reply.send(result)
                continue
            with self._lock:
                self._pending = False
                self._ready = result
                self._idle.set()

    def _prepare(self, view: list[Message], tokens: int, trigger: str) -> CompactedView | None:
        cut = cut_point(view, self.keep_tokens, self._estimate)
        if cut is None:
            return None
        if self.before is not None and (reason := self.before(trigger, tokens)) is not None:
            self.last_error = reason
            return None
        older, tail = view[:cut], view[cut:]
        request = ProviderRequest(
            system=SUMMARY_SYSTEM,
            messages=(*older, Message(id=tail[0].id, role="user", items=(Text(SUMMARY_REQUEST),))),
            purpose="compaction",
        )
        parts = [
            event.text
            for event in capped(self.provider.stream(request, self._stop))
            if isinstance(event, TextDelta)
        ]
        self._stop.check()
        text = "".join(parts).strip()
        if not text:
            raise ProviderError("bad_response", "the summary came back empty")
        summary = Message(id=0, role="user", items=(Text(f"{SUMMARY_HEADER}\n\n{text}"),))
        after = self._estimate(summary) + sum(self._estimate(m) for m in tail)
        return CompactedView(
            summary=summary,
            first_kept_id=tail[0].id,
            before_tokens=tokens,
            after_tokens=after,
        )

    def _estimate(self, message: Message) -> int:
        if message.id == 0:
            return estimate_tokens(message)
        cached = self._estimates.get(message.id)
        if cached is None:
            cached = self._estimates[message.id] = estimate_tokens(message)
        return cached

    def close(self) -> None:
        """Stop the worker (a summary in flight is abandoned) and wait for it."""
        self._stop.cancel("closed")
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(5)


def cut_point(view: Sequence[Message], keep_tokens: int, estimate: Any) -> int | None:
    """Where the kept tail starts: the latest user or assistant message such that the
    tail holds at least `keep_tokens`, and something older is left to summarise."""
    total = 0
    cut: int | None = None
    for index in range(len(view) - 1, 0, -1):
        total += estimate(view[index])
        if view[index].role in ("user", "assistant"):
            cut = index
            if total >= keep_tokens:
                break
    if cut is None or cut < 1:
        return None
    if cut == 1 and view[0].items and _is_summary(view[0]):
        return None  # only the previous summary is older: nothing new to summarise
    return cut


def _is_summary(message: Message) -> bool:
    first = message.items[0]
    return isinstance(first, Text) and first.text.startswith(SUMMARY_HEADER)
