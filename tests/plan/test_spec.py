"""The plan file: what is read, and every kind of mistake refused with one line that
names the file, the line and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from codecoder.plan.spec import PlanError, load_plan, parse_plan

GOOD = """\
title = "Add a slug helper"
max_attempts = 2
gate_timeout = 30.5

[[milestones]]
name = "helper"
task = "Write slug.py"
gates = ["test -f slug.py", "python3 -m pytest -q"]

[[milestones]]
name = "docs"
task = "Describe it."
"""


def test_a_plan_is_read_with_its_settings_and_milestones_in_order(tmp_path: Path) -> None:
    path = tmp_path / "PLAN.toml"
    path.write_text(GOOD)
    plan = load_plan(path)
    assert plan.title == "Add a slug helper"
    assert (plan.max_attempts, plan.gate_timeout) == (2, 30.5)
    assert [m.name for m in plan.milestones] == ["helper", "docs"]
    assert plan.milestones[0].gates == ("test -f slug.py", "python3 -m pytest -q")
    assert plan.milestones[1].gates == ()
    assert plan.path == str(path.resolve())
    assert len(plan.digest) == 64


def test_defaults_and_the_digest_follows_the_bytes() -> None:
    text = b'[[milestones]]\nname = "a"\ntask = "t"\n'
    plan = parse_plan(text, "P.toml")
    assert (plan.title, plan.max_attempts, plan.gate_timeout) == (None, 3, 600.0)
    assert parse_plan(text, "P.toml").digest == plan.digest
    assert parse_plan(text + b"\n", "P.toml").digest != plan.digest


MILESTONE = '[[milestones]]\nname = "a"\ntask = "t"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "P.toml: the plan has no milestones"),
        ("milestones = []\n", "P.toml:1: the plan has no milestones"),
        (
            'title = "x"\nmilestone = 3\n',
            "P.toml:2: unknown key `milestone`; did you mean `milestones`?",
        ),
        (
            'colour = "red"\n' + MILESTONE,
            "P.toml:1: unknown key `colour` (known: title, max_attempts",
        ),
        (
            MILESTONE + '\n[[milestones]]\nname = "b"\ntask = "t"\ngate = ["x"]\n',
            'P.toml:8: milestone 2 ("b"): unknown key `gate`; did you mean `gates`?',
        ),
        (
            MILESTONE + '\n[[milestones]]\nname = "a"\ntask = "again"\n',
            'P.toml:6: milestones 1 and 2 are both named "a"',
        ),
        (
            '[[milestones]]\nname = "a"\ntask = "t"\ngates = ["ok", 3]\n',
            'P.toml:4: milestone 1 ("a"): gate 2 must be a command string (it is 3)',
        ),
        (
            '[[milestones]]\nname = "a"\ntask = "t"\ngates = "make test"\n',
            'P.toml:4: milestone 1 ("a"): gates must be a list of commands (it is "make test")',
        ),
        (
            '[[milestones]]\nname = "a"\ntask = "t"\ngates = ["  "]\n',
            'P.toml:4: milestone 1 ("a"): gate 1 is an empty command',
        ),
        ('[[milestones]]\ntask = "t"\n', "P.toml:1: milestone 1 has no name"),
        (
            '[[milestones]]\nname = 7\ntask = "t"\n',
            "P.toml:2: milestone 1 needs a name, a non-empty",
        ),
        ('[[milestones]]\nname = "a"\n', 'P.toml:1: milestone 1 ("a") has no task'),
        ('[[milestones]]\nname = "a"\ntask = ""\n', 'P.toml:3: milestone 1 ("a") needs a task'),
        ('[[milestones]]\nname = "a\\nb"\ntask = "t"\n', "P.toml:2: milestone 1"),
        ("max_attempts = 0\n" + MILESTONE, "P.toml:1: max_attempts must be a whole number from 1"),
        ("max_attempts = true\n" + MILESTONE, "(it is true)"),
        ("max_attempts = 2.5\n" + MILESTONE, "(it is 2.5)"),
        ("gate_timeout = 0\n" + MILESTONE, "P.toml:1: gate_timeout must be a number of seconds"),
        ("gate_timeout = nan\n" + MILESTONE, "gate_timeout must be"),
        ("title = 3\n" + MILESTONE, "P.toml:1: title must be a string (it is 3)"),
        ("milestones = 3\n", "P.toml:1: milestones must be [[milestones]] tables"),
        ("[milestones]\nname = 'a'\n", "P.toml:1: milestones must be [[milestones]] tables"),
        ("name = \n", "P.toml: not valid TOML: "),
    ],
)
def test_a_malformed_plan_is_refused_with_one_line(text: str, expected: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_plan(text.encode(), "P.toml")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(expected) or expected in message, message


def test_a_file_that_is_not_utf8_or_missing(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"^P.toml:2: not UTF-8 text$"):
        parse_plan(b'title = "x"\n\xff\n', "P.toml")
    with pytest.raises(PlanError, match=r"nothere.toml: No such file or directory"):
        load_plan(tmp_path / "nothere.toml")
