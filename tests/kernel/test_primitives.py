"""CancelToken and Oneshot: the two primitives every wait in the kernel is built on."""

from __future__ import annotations

import threading
import time

import pytest

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.oneshot import Oneshot, OneshotError


def test_token_flips_once_and_stays_flipped() -> None:
    token = CancelToken()
    assert not token.is_cancelled()
    token.check()
    assert token.cancel("why") is True
    assert token.cancel("again") is False
    assert token.is_cancelled() and token.reason == "why"
    with pytest.raises(Cancelled):
        token.check()
    assert token.wait(0) is True


def test_token_wait_times_out_then_wakes_on_flip() -> None:
    token = CancelToken()
    started = time.monotonic()
    assert token.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    threading.Timer(0.05, token.cancel).start()
    assert token.wait(5) is True


def test_callbacks_run_once_and_can_be_unregistered() -> None:
    token = CancelToken()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append("a"))
    unregister = token.on_cancel(lambda: calls.append("b"))
    unregister()
    token.cancel()
    token.cancel()
    assert calls == ["a"]
    token.on_cancel(lambda: calls.append("late"))  # already flipped: runs at once
    assert calls == ["a", "late"]


def test_child_flips_with_parent_not_the_other_way() -> None:
    parent = CancelToken()
    child = parent.child()
    grandchild = child.child()
    child2 = parent.child()
    child2.cancel()
    assert not parent.is_cancelled()
    parent.cancel("shutdown")
    assert child.is_cancelled() and grandchild.is_cancelled()
    assert grandchild.reason == "shutdown"


def test_finished_child_does_not_stay_registered_on_parent() -> None:
    parent = CancelToken()
    for _ in range(100):
        parent.child().cancel()
    assert parent.statistics()["callbacks"] == 0


def test_oneshot_delivers_once_and_refuses_a_second_send() -> None:
    slot: Oneshot[str] = Oneshot()
    threading.Timer(0.02, lambda: slot.send("yes")).start()
    assert slot.recv(timeout=5) == "yes"
    with pytest.raises(OneshotError):
        slot.send("again")


def test_oneshot_recv_timeout_closes_it_so_a_late_reply_is_refused() -> None:
    slot: Oneshot[str] = Oneshot()
    with pytest.raises(TimeoutError):
        slot.recv(timeout=0.01)
    assert slot.send("late") is False


def test_oneshot_recv_is_woken_by_cancel_and_late_reply_is_ignored() -> None:
    slot: Oneshot[str] = Oneshot()
    token = CancelToken()
    threading.Timer(0.02, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        slot.recv(cancel=token)
    assert time.monotonic() - started < 2.0
    assert slot.send("too late") is False
    assert token.statistics()["callbacks"] == 0


def test_oneshot_answer_sent_before_recv_is_kept() -> None:
    slot: Oneshot[int] = Oneshot("req_x")
    assert slot.send(7) is True
    assert slot.recv(timeout=0) == 7
    assert slot.request_id == "req_x"
