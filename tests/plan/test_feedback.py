"""What the model is told about its milestone and about a failed gate."""

from __future__ import annotations

from codecoder.plan.feedback import (
    TAIL_BYTES,
    GateFailure,
    failure_report,
    first_message,
    output_tail,
    reopened_message,
    retry_message,
)
from codecoder.plan.spec import parse_plan

PLAN = parse_plan(
    b'title = "Slugs"\nmax_attempts = 4\n'
    b'[[milestones]]\nname = "helper"\ntask = "Write slug.py"\n'
    b'gates = ["test -f slug.py", "pytest -q"]\n'
    b'[[milestones]]\nname = "free"\ntask = "Anything"\n',
    "P.toml",
)
HELPER = PLAN.milestones[0]


def test_a_short_output_is_kept_whole() -> None:
    assert output_tail("one\ntwo\n") == ("one\ntwo\n", False)


def test_a_long_output_keeps_its_last_bytes_from_a_line_start() -> None:
    text = "".join(f"line {n}\n" for n in range(2000))
    tail, cut = output_tail(text)
    assert cut
    assert len(tail.encode()) <= TAIL_BYTES
    assert tail.endswith("line 1999\n")
    assert tail.startswith("line ")  # not half a line
    assert text.endswith(tail)


def test_a_cut_never_splits_a_character() -> None:
    text = "é" * 5000  # two bytes each: an odd limit falls inside one
    tail, cut = output_tail(text, limit=4095)
    assert cut and set(tail) == {"é"} and len(tail.encode()) <= 4095


def test_the_first_message_places_the_milestone_and_lists_its_gates() -> None:
    text = first_message(PLAN, 0, HELPER)
    assert text.startswith("Plan: Slugs\nMilestone 1 of 2: helper\n\nWrite slug.py")
    assert "- `test -f slug.py`\n- `pytest -q`" in text
    assert "checks" not in first_message(PLAN, 1, PLAN.milestones[1])  # no gates, no list


def test_a_failed_gate_report_says_which_how_and_shows_the_output() -> None:
    failure = GateFailure(1, "pytest -q", "exited", 1, "E   assert 1 == 2\n", False)
    report = failure_report(HELPER, failure)
    assert report.startswith(
        "Gate 2 of 2, `pytest -q`, exited with code 1 (the gates before it passed)."
    )
    assert "Its output:\n```\nE   assert 1 == 2\n```" in report
    message = retry_message(PLAN, HELPER, 2, failure)
    assert "this is attempt 2 of 4" in message and report in message


def test_output_with_backticks_gets_a_longer_fence() -> None:
    failure = GateFailure(0, "cat x", "exited", 2, "````\ncode\n", True)
    report = failure_report(HELPER, failure)
    assert "The last 4 KB of its output:\n`````\n````\ncode\n`````" in report


def test_timeouts_signals_and_unstarted_gates_are_worded() -> None:
    timeout = failure_report(HELPER, GateFailure(0, "sleep 9", "timeout", None, "", False, "5"))
    assert "`sleep 9`, timed out after 5 s and was killed." in timeout
    assert "It printed nothing." in timeout
    killed = failure_report(HELPER, GateFailure(0, "x", "signal", 137, "", False))
    assert "was killed by signal SIGKILL" in killed
    unstarted = failure_report(
        HELPER, GateFailure(0, "x", "unstarted", None, "", False, "No such file or directory")
    )
    assert "could not start: No such file or directory." in unstarted


def test_a_reopened_milestone_gets_its_task_and_the_report() -> None:
    failure = GateFailure(0, "test -f slug.py", "exited", 1, "", False)
    text = reopened_message(PLAN, 0, HELPER, failure)
    assert text.startswith(first_message(PLAN, 0, HELPER))
    assert "passed in an earlier run, but its checks fail now" in text
    assert "`test -f slug.py`, exited with code 1." in text
