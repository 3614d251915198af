"""Plan progress in the store (schema version 4): a run, its milestones, and the run
`--continue` finds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codecoder.sessions import SessionError, SessionStore
from tests.sessions.test_session_migration import PARENT, write_v1

PLAN = "/proj/PLAN.toml"


def test_a_run_records_each_milestone_and_the_plan(store: SessionStore, tmp_path: Path) -> None:
    session = store.create(tmp_path, "m/m")
    run = store.start_plan_run(session, tmp_path, PLAN, "d1", ["a", "b", "c"])
    store.plan_attempt_started(run, "a")
    store.plan_milestone_finished(run, "a", "passed")
    store.plan_attempt_started(run, "b")
    store.plan_attempt_started(run, "b")
    store.plan_milestone_finished(run, "b", "failed")
    store.plan_run_finished(run, "failed")
    found = store.latest_plan_run(tmp_path, PLAN)
    assert found is not None
    assert (found.id, found.session_id) == (run, session)
    assert (found.digest, found.status) == ("d1", "failed")
    assert [(m.name, m.position, m.status, m.attempts) for m in found.milestones] == [
        ("a", 0, "passed", 1),
        ("b", 1, "failed", 2),
        ("c", 2, "pending", 0),
    ]
    assert found.passed == ("a",)
    assert store.latest_plan_run(tmp_path, "/proj/OTHER.toml") is None
    assert store.latest_plan_run(tmp_path / "elsewhere", PLAN) is None


def test_going_on_with_a_run_keeps_what_passed_and_follows_the_new_order(
    store: SessionStore, tmp_path: Path
) -> None:
    session = store.create(tmp_path, "m/m")
    run = store.start_plan_run(session, tmp_path, PLAN, "d1", ["a", "b", "c"])
    store.plan_attempt_started(run, "a")
    store.plan_milestone_finished(run, "a", "passed")
    # the file changed: "b" removed, "new" inserted before "a"
    again = store.start_plan_run(session, tmp_path, PLAN, "d2", ["new", "a", "c"], run_id=run)
    assert again == run
    found = store.latest_plan_run(tmp_path, PLAN)
    assert found is not None and (found.digest, found.status) == ("d2", "running")
    assert [(m.name, m.position, m.status) for m in found.milestones] == [
        ("new", 0, "pending"),
        ("a", 1, "passed"),
        ("c", 2, "pending"),
        ("b", -1, "pending"),
    ]


def test_the_latest_run_of_a_plan_is_the_one_started_or_continued_last(
    store: SessionStore, tmp_path: Path
) -> None:
    session = store.create(tmp_path, "m/m")
    first = store.start_plan_run(session, tmp_path, PLAN, "d", ["a"])
    second = store.start_plan_run(session, tmp_path, PLAN, "d", ["a"])
    latest = store.latest_plan_run(tmp_path, PLAN)
    assert latest is not None and latest.id == second
    store.start_plan_run(session, tmp_path, PLAN, "d", ["a"], run_id=first)
    latest = store.latest_plan_run(tmp_path, PLAN)
    assert latest is not None and latest.id == first


def test_unknown_runs_and_milestones_are_errors(store: SessionStore, tmp_path: Path) -> None:
    session = store.create(tmp_path, "m/m")
    run = store.start_plan_run(session, tmp_path, PLAN, "d", ["a"])
    with pytest.raises(SessionError, match="no milestone 'zzz'"):
        store.plan_attempt_started(run, "zzz")
    with pytest.raises(SessionError, match="no plan run"):
        store.plan_run_finished("f" * 32, "passed")
    with pytest.raises(SessionError, match="no session"):
        store.start_plan_run("e" * 32, tmp_path, PLAN, "d", ["a"])


def test_a_version_1_database_gains_the_plan_tables(db: Path) -> None:
    db.parent.mkdir(parents=True)
    write_v1(db)
    with SessionStore(db) as store:
        run = store.start_plan_run(PARENT, "/proj", PLAN, "d", ["a"])
        store.plan_milestone_finished(run, "a", "passed")
        found = store.latest_plan_run("/proj", PLAN)
        assert found is not None and found.passed == ("a",)
    conn = sqlite3.connect(db)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert {"plan_runs", "plan_milestones"} <= tables
