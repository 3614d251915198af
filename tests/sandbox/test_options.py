"""`--sandbox MODE` from each face to AgentOptions: `exec`, the interactive client (also
before the command word), `codecoder acp` / `daemon` (DaemonOptions), and an ACP
client's `_meta.codecoder.sandbox` (the terminal client on a daemon passes its flag so)."""

from __future__ import annotations

import pytest

from codecoder.app.options import AgentOptions
from codecoder.cli import daemon_cmd
from codecoder.cli.commands import agent_options, parse
from codecoder.daemon.client import _session_meta
from codecoder.daemon.handler import _session_overrides
from codecoder.daemon.rpc import RpcError


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["exec", "--sandbox", "read-only", "task"], "read-only"),
        (["--sandbox", "workspace-write", "exec", "task"], "workspace-write"),
        (["exec", "task"], None),
        (["--sandbox", "off"], "off"),
        (["resume", "--sandbox", "read-only"], "read-only"),
    ],
)
def test_the_flag_reaches_the_agent_options(argv: list[str], expected: str | None) -> None:
    assert agent_options(parse(argv)).sandbox == expected


def test_an_unknown_mode_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(["exec", "--sandbox", "workspace", "task"])
    assert stopped.value.code == 2
    assert "did you mean workspace-write?" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["acp", "daemon"])
def test_acp_and_daemon_take_the_flag_for_their_sessions(command: str) -> None:
    namespace = daemon_cmd.parse([command, "--sandbox", "read-only"])
    assert namespace is not None
    assert daemon_cmd._defaults_of(namespace).sandbox == "read-only"
    plain = daemon_cmd.parse([command])
    assert plain is not None and daemon_cmd._defaults_of(plain).sandbox is None


def test_a_session_new_may_choose_its_sandbox() -> None:
    assert _session_overrides({"codecoder": {"sandbox": "off"}}) == {"sandbox": "off"}
    assert _session_overrides({"codecoder": {"approval": "full-auto"}}) == {"approval": "full-auto"}
    with pytest.raises(RpcError, match="sandbox` must be one of off, workspace-write"):
        _session_overrides({"codecoder": {"sandbox": "strict"}})


def test_the_terminal_client_passes_its_flag_to_the_daemon() -> None:
    assert _session_meta(AgentOptions(sandbox="read-only"))["sandbox"] == "read-only"
    assert "sandbox" not in _session_meta(AgentOptions())
