"""Sub-agents: child AgentLoops on their own threads (seed §3.2, DESIGN.md invariant 5).

The parent's tool call blocks on each child's result oneshot while honouring its own
CancelToken; each child's turn token is a child of the parent's, so cancelling the parent
stops the child and everything the child runs. The child's events reach the parent's
channel wrapped with the child's id. Several children run in parallel threads when all
of them are read-only (they cannot conflict), otherwise one after another; answers come
back in the order of the tasks either way.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

import msgspec

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.events import AgentEvent, Done, Error, NewToken, Subagent, ToolStarted
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.oneshot import Oneshot

_ids = itertools.count(1)


class ChildOutcome(msgspec.Struct, frozen=True):
    """What one child produced: its final answer, or why it has none."""

    agent_id: str
    status: str  # completed | cancelled | error | max_rounds | shutdown
    answer: str
    error: str = ""


class ChildSpec(msgspec.Struct, frozen=True):
    """A child to run: its task and the loop that will run it (built by the edge)."""

    task: str
    loop: AgentLoop
    read_only: bool


def run_children(
    specs: Sequence[ChildSpec],
    *,
    cancel: CancelToken,
    emit: Callable[[AgentEvent], None],
    max_parallel: int = 4,
) -> list[ChildOutcome]:
    """Run every child to its end and return outcomes in task order. Raises Cancelled
    when `cancel` flips (after every child has ended: no child outlives the call)."""
    parallel = max_parallel if all(s.read_only for s in specs) else 1
    slots = threading.BoundedSemaphore(max(1, parallel))
    runners = [_ChildRunner(spec, cancel, emit, slots) for spec in specs]
    for runner in runners:
        runner.start()
    outcomes: list[ChildOutcome] = []
    try:
        for runner in runners:
            outcomes.append(runner.result.recv(cancel=cancel))
    finally:
        for runner in runners:
            runner.join()
    if cancel.is_cancelled():
        raise Cancelled(cancel.reason)
    return outcomes


class _ChildRunner:
    """Drives one child loop on its own thread: submit the task, forward its events,
    put the final answer into the result oneshot, shut the child down."""

    def __init__(
        self,
        spec: ChildSpec,
        cancel: CancelToken,
        emit: Callable[[AgentEvent], None],
        slots: threading.BoundedSemaphore,
    ) -> None:
        self.spec = spec
        self.cancel = cancel
        self.emit = emit
        self.slots = slots
        self.agent_id = f"{spec.loop.name}-{next(_ids)}"
        spec.loop.rename(self.agent_id)  # its trace lines and threads say which child
        self.result: Oneshot[ChildOutcome] = Oneshot()
        self.thread = threading.Thread(
            target=self._run, name=f"subagent-{self.agent_id}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        self.thread.join()

    def _run(self) -> None:
        outcome = ChildOutcome(self.agent_id, "error", "", "the sub-agent failed to start")
        try:
            with self.slots:
                outcome = self._drive()
        except Exception as exc:  # the parent must never wait for an answer that cannot come
            outcome = ChildOutcome(self.agent_id, "error", "", f"sub-agent crashed: {exc!r}")
        finally:
            self.result.send(outcome)

    def _drive(self) -> ChildOutcome:
        if self.cancel.is_cancelled():
            return ChildOutcome(self.agent_id, "cancelled", "")
        handle = self.spec.loop.start()
        answer: list[str] = []
        error = ""
        status = "error"
        try:
            handle.send(self.spec.task, parent=self.cancel)
            while (event := handle.next_event()) is not None:
                self.emit(Subagent(agent_id=self.agent_id, event=event))
                if isinstance(event, NewToken):
                    answer.append(event.text)
                elif isinstance(event, ToolStarted):
                    answer.clear()  # the answer is what the child says after its last tool
                elif isinstance(event, Error):
                    error = event.message
                elif isinstance(event, Done):
                    status = event.reason
                    break
        finally:
            handle.shutdown()
            self.spec.loop.join_readers()
        return ChildOutcome(self.agent_id, status, "".join(answer).strip(), error)
