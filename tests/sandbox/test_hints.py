"""The hints a failed confined command comes back with (sandbox/hints.py): each must
match the failure it names and none of its look-alikes, since a false hint sends the
model after an escalation that would not help. Real commands through run_command where
bwrap runs; the look-alike texts of programs not installed here through the hint itself.
Where nobody can allow `sandbox: false`, the hint says to do without it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import ToolContext
from codecoder.sandbox.bwrap import Confinement
from codecoder.sandbox.hints import failure_hint
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand
from tests.cli.test_headless import call, events_of, run_exec, script

from .conftest import needs_bwrap

pytestmark = pytest.mark.timeout(120)

NETWORK_OFF = "[sandbox: the network is off for commands"
NOTHING_LISTENS = "[sandbox: commands have their own localhost"


def confined(
    manager: ProcessManager, workspace: Path, command: str, sandbox: Sandbox | None = None
) -> ToolResult:
    sandbox = sandbox or Sandbox("workspace-write")
    ctx = ToolContext("call_1", CancelToken(), workspace, lambda event: None)
    try:
        return RunCommand(manager, sandbox).run({"command": command, "timeout": 60}, ctx)
    finally:
        sandbox.close()


LOOK_ALIKES = {
    "a module that is not installed": "python3 -c 'import nosuchmod'",
    "a file that is not there": "python3 -c 'open(\"missing.txt\")'",
}


@needs_bwrap
def test_a_failure_the_sandbox_did_not_cause_gets_no_hint(
    manager: ProcessManager, workspace: Path
) -> None:
    """The issue's example: `import nosuchmod` came back with "the network is off …
    run it again with `sandbox: false`" (`enotfound` inside `ModuleNotFoundError`). A
    host that cannot be looked up still gets the hint."""
    for case, command in LOOK_ALIKES.items():
        result = confined(manager, workspace, command)
        assert result.status == "error", result.text
        assert "[sandbox:" not in result.text, (case, result.text)
    lookup = "python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 443)'"
    result = confined(manager, workspace, lookup)
    assert NETWORK_OFF in result.text, result.text
    assert "run it again with `sandbox: false`" in result.text


@needs_bwrap
def test_nothing_listening_on_localhost_is_not_called_the_network(
    manager: ProcessManager, workspace: Path
) -> None:
    connect = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9))'"
    result = confined(manager, workspace, connect)
    assert "Connection refused" in result.text
    assert NOTHING_LISTENS in result.text and NETWORK_OFF not in result.text, result.text


@needs_bwrap
def test_where_nobody_can_allow_an_escalation_the_hint_does_not_suggest_one(
    manager: ProcessManager, workspace: Path
) -> None:
    nobody = Sandbox("workspace-write", escalation=lambda: False)
    result = confined(manager, workspace, "touch /var/tmp/x", nobody)
    assert "[sandbox: the write was blocked" in result.text, result.text
    assert "`sandbox: false` would be refused" in result.text
    assert "run it again with `sandbox: false`" not in result.text


CONFINED = Confinement("workspace-write", Path("/nonexistent-workspace"))

TEXTS: dict[str, tuple[str, str | None]] = {
    # the network, and what only looks like it
    "curl": ("curl: (6) Could not resolve host: example.com", NETWORK_OFF),
    "wget": ("wget: unable to resolve host address 'example.com'", NETWORK_OFF),
    "npm": ("npm error code ENOTFOUND\nnpm error getaddrinfo ENOTFOUND registry", NETWORK_OFF),
    "node": ("Error: getaddrinfo EAI_AGAIN example.com", NETWORK_OFF),
    "git": ("fatal: unable to access 'https://x/': Could not resolve host: x", NETWORK_OFF),
    "ModuleNotFoundError": ("ModuleNotFoundError: No module named 'x'", None),
    "FileNotFoundError": ("FileNotFoundError: [Errno 2] No such file: 'a'", None),
    "an error class named *ENotFound": ("raise FileENotFoundError()", None),
    "psql, no server on a socket": (
        'psql: error: connection to server on socket "/run/postgresql/.s.PGSQL.5432" '
        "failed: No such file or directory",
        None,
    ),
    "a linker": ("error: symbol name resolution failed for foo", None),
    # nothing listening
    "refused": ("ConnectionRefusedError: [Errno 111] Connection refused", NOTHING_LISTENS),
    "curl to localhost": ("curl: (7) Couldn't connect to server", NOTHING_LISTENS),
    "node to localhost": ("Error: connect ECONNREFUSED 127.0.0.1:5432", NOTHING_LISTENS),
    # writes
    "EROFS": ("touch: cannot touch '/x': Read-only file system", "[sandbox: the write was blocked"),
    "a read-only attribute": ("AttributeError: readonly attribute", None),
    "read-only, not the file system": ("error: the index is read-only", None),
    # masked places and /tmp
    "permission denied, not a masked place": ("cat: ./secret: Permission denied", None),
    "a /tmp path the host lacks too": (
        f"cat: /tmp/{uuid.uuid4().hex}/x: No such file or directory",
        None,
    ),
}


def test_each_hint_against_its_look_alikes() -> None:
    """Every hint's sign, and texts that look like it but are other failures."""
    wrong: dict[str, str | None] = {}
    for case, (output, expected) in TEXTS.items():
        hint = failure_hint(output, CONFINED, (os.path.expanduser("~/.ssh"),))
        if (hint is None) != (expected is None) or (hint and expected and expected not in hint):
            wrong[case] = hint
    assert wrong == {}


@needs_bwrap
def test_a_headless_run_is_not_told_to_escalate(tmp_path: Path) -> None:
    """Through `exec` (nobody to answer): the model's failed lookup comes back with a
    hint that does not ask for the `sandbox: false` the run would refuse."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lookup = "python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 443)'"
    path = script(tmp_path, [[call("run_command", command=lookup)], ["done"]])
    done = run_exec(
        "--json", "--script", str(path), "-C", str(workspace), "--approval", "full-auto", "go"
    )
    assert done.returncode == 0, done.stderr
    [finished] = [e for e in events_of(done.stdout) if e["type"] == "tool_finished"]
    assert NETWORK_OFF in finished["content"], finished
    assert "`sandbox: false` would be refused" in finished["content"]
