"""The batch summary's cost: the sum of the costs it knows, and how many tasks had none
(a model without a price), never `unknown` for the whole run because one task had none."""

from __future__ import annotations

from pathlib import Path

import pytest

from codecoder import paths
from tests.batch.helpers import make_repo, read_results, run_batch, write_tasks
from tests.fakes.wire_server import Reply, Text, Use, WireServer

pytestmark = pytest.mark.timeout(180)


def test_the_summary_adds_the_known_costs_and_counts_the_tasks_without_one(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo")
    tasks = write_tasks(
        tmp_path,
        [
            {"id": "priced-1", "repo": "repo", "task": "x", "model": "fake/priced"},
            {"id": "priced-2", "repo": "repo", "task": "x", "model": "fake/priced"},
            {"id": "free", "repo": "repo", "task": "x", "model": "fake/unpriced"},
        ],
    )
    with WireServer() as server:
        for _ in range(3):  # a thousand tokens each way: $1 + $2 where priced
            server.enqueue(Reply((Text("done"), Use(input=1000, output=1000))))
        config = paths.config_dir() / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[providers.fake]\nbase_url = "{server.url}/v1"\nwire = "chat"\n'
            '[prices."fake/priced"]\ninput = 1000.0\noutput = 2000.0\n'
        )
        done = run_batch(str(tasks), "--parallel", "1")
    results = read_results(tmp_path / "tasks.results.jsonl")
    assert done.returncode == 0, (done.stderr, results)
    costs = {id: line["cost"] for id, line in results.items()}
    assert costs == {"priced-1": 3.0, "priced-2": 3.0, "free": None}
    total = done.stderr.strip().splitlines()[-1]
    assert "cost $6.0000 (1 task without a cost)" in total, total
