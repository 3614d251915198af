"""`codecoder models` and `codecoder doctor` against a real config file and real sockets."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from codecoder.cli.provider_commands import add_parsers, run_doctor, run_models
from tests.fakes.wire_server import WireServer

KEY_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "FAKE_KEY",
)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "codecoder").mkdir()
    return tmp_path / "codecoder" / "config.toml"


def _write(config: Path, server: WireServer, default: str) -> None:
    config.write_text(
        f'model = "{default}"\n'
        "[providers.fake]\n"
        f'base_url = "{server.url}/v1"\n'
        'api_key_env = "FAKE_KEY"\n'
        'models = ["fake-model"]\n'
        "[providers.fakeant]\n"
        f'base_url = "{server.url}"\n'
        'wire = "anthropic"\n'
        "[providers.ollama]\n"
        f'base_url = "http://127.0.0.1:{_closed_port()}/v1"\n'
    )


def test_models_lists_providers_keys_and_models(
    config_home: Path,
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _write(config_home, server, "fake/fake-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert run_models(argparse.Namespace()) == 0
    out = capsys.readouterr().out
    assert "default model: fake/fake-model" in out
    assert any(
        line.split()[:4] == ["openai", "responses", "OPENAI_API_KEY", "set"]
        for line in out.splitlines()
    )
    assert "ANTHROPIC_API_KEY missing" in out
    assert "FAKE_KEY missing" in out and f"{server.url}/v1" in out
    assert "  fake/fake-model  (default)" in out
    assert "  anthropic/claude-sonnet-4-5" in out


def test_doctor_checks_keys_and_reachability(
    config_home: Path,
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _write(config_home, server, "fake/fake-model")
    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    assert run_doctor(argparse.Namespace(timeout=2.0)) == 0  # ollama is down, not in use
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["fake"].startswith("ok") and "reachable" in lines["fake"]
    assert lines["fakeant"].startswith("ok")
    assert lines["openai"].startswith("off") and "OPENAI_API_KEY is not set" in lines["openai"]
    assert lines["ollama"].startswith("off") and lines["ollama"].endswith("(not in use)")
    assert "unreachable: connection refused by 127.0.0.1:" in lines["ollama"]
    gets = [r for r in server.requests if r.method == "GET"]
    assert {r.path for r in gets} == {"/v1/models"}
    assert any(r.headers.get("authorization") == "Bearer sk-fake" for r in gets)


def test_doctor_fails_when_the_default_provider_is_unusable(
    config_home: Path, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(config_home, server, "fake/fake-model")  # FAKE_KEY is not set
    assert run_doctor(argparse.Namespace(timeout=2.0)) == 1
    assert "FAKE_KEY is not set" in capsys.readouterr().out


def test_a_broken_config_is_a_usage_error(
    config_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_home.write_text("[providers.x]\nwire = 'smoke-signals'\nbase_url = 'http://h'\n")
    assert run_models(argparse.Namespace()) == 2
    assert run_doctor(argparse.Namespace(timeout=1.0)) == 2
    assert "wire must be one of" in capsys.readouterr().err


def test_add_parsers_registers_both_commands() -> None:
    parser = argparse.ArgumentParser()
    add_parsers(parser.add_subparsers())
    assert parser.parse_args(["models"]).func is run_models
    doctor = parser.parse_args(["doctor", "--timeout", "0.5"])
    assert doctor.func is run_doctor and doctor.timeout == 0.5


def test_doctor_passes_only_when_the_provider_in_use_does(
    config_home: Path,
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config_home.write_text(
        f'model = "fake/fake-model"\n[providers.fake]\nbase_url = "{server.url}/v1"\n'
    )
    assert run_doctor(argparse.Namespace(timeout=2.0)) == 0  # the unused built-ins are off
    out = capsys.readouterr().out
    assert "FAIL" not in out and "(not in use)" in out
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-x")  # set, and down: not in use
    deepseek = f'[providers.deepseek]\nbase_url = "http://127.0.0.1:{_closed_port()}"\n'
    config_home.write_text(config_home.read_text() + deepseek)
    assert run_doctor(argparse.Namespace(timeout=2.0)) == 0
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["deepseek"].startswith("off")
    config_home.write_text('model = "deepseek/deepseek-chat"\n' + deepseek)  # in use now
    assert run_doctor(argparse.Namespace(timeout=2.0)) == 1
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["deepseek"].startswith("FAIL")


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan"), float("inf"), 1e308])
def test_doctor_refuses_a_timeout_it_cannot_use(
    config_home: Path, timeout: float, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_doctor(argparse.Namespace(timeout=timeout)) == 2
    assert "--timeout must be" in capsys.readouterr().err


def test_doctor_with_nothing_set_up_fails_and_says_what_to_do(
    config_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config_home.write_text(
        f'[providers.ollama]\nbase_url = "http://127.0.0.1:{_closed_port()}/v1"\n'
    )
    assert run_doctor(argparse.Namespace(timeout=1.0)) == 1
    assert "no provider is usable" in capsys.readouterr().err
