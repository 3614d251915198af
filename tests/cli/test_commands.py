"""The command line as a new user types it: options before the command, resumed sessions
keeping their model, `trust` / `untrust`, suggestions for misspellings (issue 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from codecoder.cli.commands import COMMANDS, _split, build_parser
from tests.fakes.wire_server import WireServer, text_reply

CLI = [sys.executable, "-m", "codecoder"]


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, input=input, timeout=60, check=False
    )


def script(tmp_path: Path, replies: list[Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    return str(path)


def touch(name: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "run_command", "args": {"command": f"touch {name}"}}


# --- options before the command (item 12) -----------------------------------------


def test_options_before_exec_are_honoured(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = script(tmp_path, [[touch("made")], ["done"]])
    # exec's default is never-ask, which would deny the command; -C decides where it runs
    result = run("-C", str(workspace), "--approval", "full-auto", "--script", path, "exec", "go")
    assert result.returncode == 0, result.stderr
    assert (workspace / "made").exists()
    assert result.stdout == "done\n"


def test_a_model_before_exec_reaches_it(tmp_path: Path) -> None:
    result = run("-m", "gpt-5", "exec", "-C", str(tmp_path), "hi")
    assert result.returncode == 2
    assert "did you mean openai/gpt-5?" in result.stderr
    result = run("--model=x/y", "--script", script(tmp_path, [["hi"]]), "exec", "hi")
    assert result.returncode == 2 and "--script and --model exclude each other" in result.stderr


def test_an_option_the_command_does_not_take_is_refused_by_name() -> None:
    result = run("-m", "openai/gpt-5", "sessions")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "codecoder: error: -m/--model does not apply to `codecoder sessions`"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["exec", "x"], ("exec", [], ["x"])),
        (["-m", "a/b", "exec", "x"], ("exec", ["-m", "a/b"], ["x"])),
        (["--model=a/b", "-C", "d", "exec", "x"], ("exec", ["--model=a/b", "-C", "d"], ["x"])),
        (["--approval", "exec", "exec", "x"], ("exec", ["--approval", "exec"], ["x"])),
        (["--continue", "resume"], ("resume", ["--continue"], [])),
        (["-m", "a/b"], ("-m", [], ["-m", "a/b"])),
        (["-h", "exec"], (None, [], ["-h", "exec"])),
        ([], (None, [], [])),
    ],
)
def test_split_finds_the_command_after_options(
    argv: list[str], expected: tuple[str | None, list[str], list[str]]
) -> None:
    assert _split(argv) == expected


def test_the_command_list_is_the_parsers() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert tuple(sub.choices or ()) == COMMANDS


# --- a resumed session keeps its model (item 11) ------------------------------------


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as fake:
        yield fake


def fake_provider(server: WireServer) -> None:
    config = paths.config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[providers.fake]\nbase_url = "{server.url}/v1"\nwire = "chat"\n')


def test_continue_and_resume_go_on_with_the_sessions_model(
    tmp_path: Path, server: WireServer
) -> None:
    fake_provider(server)
    server.enqueue(*(text_reply(f"answer {n}") for n in range(5)))
    first = run("exec", "--json", "-m", "fake/first-model", "-C", str(tmp_path), "one")
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout.splitlines()[0])["session_id"]
    for extra in (["--continue"], ["--resume", session[:8]]):
        result = run("exec", *extra, "-C", str(tmp_path), "next")
        assert result.returncode == 0, result.stderr
    result = run("resume", "-C", str(tmp_path), input="and now?\n")
    assert result.returncode == 0, result.stderr
    result = run("exec", "--continue", "-m", "fake/other-model", "-C", str(tmp_path), "switch")
    assert result.returncode == 0, result.stderr
    models = [post.json["model"] for post in server.posts]
    assert models == ["first-model"] * 4 + ["other-model"]


def test_a_scripted_session_needs_a_script_or_a_model_to_go_on(tmp_path: Path) -> None:
    result = run("exec", "--script", script(tmp_path, [["hi"]]), "-C", str(tmp_path), "one")
    assert result.returncode == 0, result.stderr
    result = run("exec", "--continue", "-C", str(tmp_path), "two")
    assert result.returncode == 2
    assert result.stderr == (
        "codecoder: this session ran on a script: give --script FILE, or -m PROVIDER/MODEL "
        "to go on with a model\n"
    )


# --- suggestions (item 16) ----------------------------------------------------------


@pytest.mark.parametrize("spec", ["nope/x", "nope/gpt-5", "opneai/brand-new"])
def test_an_unknown_provider_is_never_suggested_wrongly(spec: str) -> None:
    """Issue 29 item 13: `nope/x` is not `openai/x` misspelt (no such model either): no
    guess, only the list of real providers. A known model under an unknown provider gets
    the provider that has it; a near spelling of a provider keeps the model given."""
    result = run("exec", "-m", spec, "x")
    assert result.returncode == 2
    err = result.stderr.strip()
    assert "known: anthropic, deepseek, ollama, openai, openrouter" in err, err
    expected = {
        "nope/x": None,
        "nope/gpt-5": "openai/gpt-5",
        "opneai/brand-new": "openai/brand-new",
    }
    hint = expected[spec]
    assert err.endswith(f"did you mean {hint}?" if hint else "to config)"), err


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["exec", "--aproval", "full-auto", "x"], "(did you mean --approval?)"),
        (["exec", "--approval", "full_auto", "x"], "(did you mean full-auto?)"),
        (["exce", "x"], "(did you mean exec?)"),
        (["sesions"], "(did you mean sessions?)"),
        (["fix the failing test"], '(to run a task: codecoder exec "fix the failing test")'),
        (["exec", "-m", "gpt-5", "x"], "did you mean openai/gpt-5?"),
        (["exec", "-m", "claude-sonnet-4-5", "x"], "did you mean anthropic/claude-sonnet-4-5?"),
        (["exec", "-m", "opneai/gpt-5", "x"], "did you mean openai/gpt-5?"),
    ],
)
def test_a_misspelling_gets_a_suggestion(args: list[str], hint: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.rstrip().endswith(hint), result.stderr
