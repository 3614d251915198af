"""Retries a person can see (issue 10, item 15): `codecoder exec` against a server that is
not there says each retry on stderr (a `status_update` with `--json`) and gives up on a
refused loopback port after two retries, not 27 s later; a server that asks to be retried
later is still retried as before."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.ports import ProviderError
from codecoder.providers.http import HttpClient, RetryPolicy
from codecoder.providers.registry import wire_format
from tests.fakes.wire_server import Reply, Status, Text, WireServer

CLI = [sys.executable, "-m", "codecoder"]


def retry_detail(attempt: int, of: int, what: str) -> re.Pattern[str]:
    """A retrying status's detail: the wait is random (jittered), the rest exact."""
    return re.compile(rf"in \d+\.\d s \(attempt {attempt} of {of}\): {re.escape(what)}")


@pytest.fixture
def port() -> Iterator[int]:
    """A loopback port bound but not listening for the test's length: the kernel refuses
    every connection to it, and no other program can take it meanwhile."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


def configure(base_url: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "codecoder"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(f'[providers.local]\nbase_url = "{base_url}"\n')


def run_exec(workspace: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [*CLI, "exec", "-m", "local/some-model", "-C", str(workspace), *args, "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result, time.monotonic() - started


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_closed_loopback_port_gives_up_after_two_announced_retries(
    host: str, port: int, tmp_path: Path
) -> None:
    configure(f"http://{host}:{port}/v1")
    result, elapsed = run_exec(tmp_path)
    assert result.returncode == 1, result.stderr
    refused = f"local: connection refused by {host}:{port}"
    lines = result.stderr.splitlines()
    assert len(lines) == 3, result.stderr
    for attempt, line in enumerate(lines[:2], start=2):
        assert line.startswith("retrying "), line
        assert retry_detail(attempt, 3, refused).fullmatch(line[len("retrying ") :]), line
    assert lines[2] == f"codecoder: {refused} (gave up after 3 tries)"
    assert elapsed < 8.0  # the two waits are at most 1 s and 2 s; it was 27 s


def test_json_gives_each_retry_as_a_status_update(port: int, tmp_path: Path) -> None:
    configure(f"http://127.0.0.1:{port}/v1")
    result, _ = run_exec(tmp_path, "--json")
    assert result.returncode == 1, result.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]
    retries = [e for e in events if e["type"] == "status_update" and e["status"] == "retrying"]
    refused = f"local: connection refused by 127.0.0.1:{port}"
    assert [e["turn"] for e in retries] == [1, 1]
    for attempt, event in enumerate(retries, start=2):
        assert retry_detail(attempt, 3, refused).fullmatch(event["detail"]), event
    error = next(e for e in events if e["type"] == "error")
    assert error["kind"] == "network" and error["message"].endswith("(gave up after 3 tries)")
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "error"
    assert "retrying" not in result.stderr  # the JSON lines say it; stderr stays quiet


def test_a_503_with_retry_after_is_still_retried_after_its_wait(
    tmp_path: Path, server: WireServer
) -> None:
    configure(f"{server.url}/v1")
    server.enqueue(
        Status(503, '{"error": {"message": "busy"}}', (("Retry-After", "1"),)),
        Reply((Text("after the wait"),)),
    )
    result, elapsed = run_exec(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "after the wait\n"
    (line,) = result.stderr.splitlines()
    assert line == "retrying in 1.0 s (attempt 2 of 6): local: server overloaded (HTTP 503): busy"
    assert elapsed >= 1.0 and len(server.posts) == 2


# --- the policy, in process ------------------------------------------------------------


def _attempts(retry: RetryPolicy, url: str) -> tuple[list[str], ProviderError]:
    http = HttpClient(url, retry=retry)
    statuses: list[str] = []
    stream = http.stream(
        "/chat",
        b"{}",
        headers={},
        cancel=CancelToken(),
        new_parser=wire_format("chat").new_parser,
        label="local",
    )
    try:
        for event in stream:
            assert isinstance(event, StatusUpdate)
            statuses.append(event.detail)
    except ProviderError as error:
        return statuses, error
    finally:
        http.close()
    raise AssertionError("the stream did not fail")


def test_the_loopback_limit_is_the_policys_own(port: int) -> None:
    url = f"http://127.0.0.1:{port}"
    statuses, error = _attempts(RetryPolicy(base_delay=0.01, loopback_refused=0), url)
    assert statuses == [] and "gave up" not in error.message
    policy = RetryPolicy(max_attempts=4, base_delay=0.01, loopback_refused=9)
    statuses, error = _attempts(policy, url)
    assert [s.split(":")[0] for s in statuses] == [
        "in 0.0 s (attempt 2 of 4)",
        "in 0.0 s (attempt 3 of 4)",
        "in 0.0 s (attempt 4 of 4)",
    ]
    assert error.message.endswith("(gave up after 4 tries)") and error.retryable
