"""The configuration schema (config_schema) and how files are read against it (config)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from codecoder import config_schema, paths
from codecoder.config import ConfigError, read_toml, user_config
from codecoder.config_schema import ShellSettings, locate, shell_settings
from codecoder.permissions import RulePolicy, trust

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def problem(tmp_path: Path, text: str) -> str:
    path = write(tmp_path / "config.toml", text)
    with pytest.raises(ConfigError) as caught:
        read_toml(path)
    message = str(caught.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message
    return message[len(str(path)) :]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[permisions]\nallow = []\n",
            ":1: unknown table [permisions]; did you mean [permissions]?",
        ),
        (
            '[permissions]\nallow = [\n  "read_file",\n]\ndenied = ["run_command(rm:*)"]\n',
            ":5: unknown key `denied` in [permissions]; did you mean `deny`?",
        ),
        (
            'model = "a/b"\n\n[providers.local]\nbase_url = "http://h/v1"\nmodel = "local/x"\n',
            ":5: unknown key `model` in [providers.local]; did you mean `models`? "
            "(`model` belongs at the top, above the first [table])",
        ),
        ("threshold = 0.5\n", ":1: unknown key `threshold`; `threshold` belongs in [compaction]"),
        (
            'permisions.allow = ["x"]\n',
            ":1: unknown table [permisions]; did you mean [permissions]?",
        ),
        (
            'providers = { local = { bse_url = "h" } }\n',
            ":1: unknown key `bse_url` in [providers.local]; did you mean `base_url`?",
        ),
        (
            '[prices."openai/gpt-5"]\ninput = 1\noutputs = 2\n',
            ':3: unknown key `outputs` in [prices."openai/gpt-5"]; did you mean `output`?',
        ),
        (
            "[zzz]\n",
            ":1: unknown table [zzz] (valid here: compaction, daemon, hooks, http, mcp, model, "
            "models, permissions, prices, providers, record, sandbox, shell, subagents, undo, "
            "web)",
        ),
    ],
)
def test_unknown_names_are_errors_with_the_line_and_the_nearest_name(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert problem(tmp_path, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[compaction]\nthreshold = 2\n",
            ":2: [compaction] threshold must be a number above 0 and at most 1 (it is 2)",
        ),
        (
            "[providers.x]\nwire = 'smoke'\n",
            ':2: [providers.x] wire must be one of "chat", "responses", "anthropic" '
            '(it is "smoke")',
        ),
        (
            '[providers.x]\nheaders = { "X-Team" = 1 }\n',
            ":2: [providers.x] headers must be a table of strings (X-Team is 1)",
        ),
        (
            '[permissions]\nallow = ["ok", 3]\n',
            ":2: [permissions] allow must be a list of strings (item 2 is 3)",
        ),
        (
            "[subagents]\nrun_command = 'yes'\n",
            ':2: [subagents] run_command must be true or false (it is "yes")',
        ),
        ('[prices."a/b"]\ninput = 1\n', ':1: [prices."a/b"] needs output (a number at least 0)'),
        ("model = 5\n", ":1: model must be a string (it is 5)"),
        (
            "[shell]\nenv_keep = 'HOME'\n",
            ':2: [shell] env_keep must be a list of strings (it is "HOME")',
        ),
        (
            "[http]\nca = 'os'\n",
            ':2: [http] ca must be one of "system", "certifi" (it is "os")',
        ),
    ],
)
def test_wrong_values_are_errors_naming_what_is_expected(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert problem(tmp_path, text) == expected


def test_a_file_that_is_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'# ok\nmodel = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=re.escape(f"{path}:2: not UTF-8 text (byte 0xe9)")):
        read_toml(path)


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'\xef\xbb\xbfmodel = "a/b"\n')
    assert read_toml(path) == {"model": "a/b"}


def test_every_table_the_code_reads_is_declared(tmp_path: Path) -> None:
    text = """
model = "local/qwen"

[providers.local]
base_url = "http://localhost:8000/v1"
wire = "chat"
api_key_env = "LOCAL_KEY"
headers = { "X-Team" = "tools" }
models = ["qwen"]
max_tokens = 8192
reasoning_effort = "high"
thinking_budget = 2048
extra_body = { top_k = 20, options = { seed = 1 } }

[prices."local/qwen"]
input = 0
output = 0.5
cached = 0

[models."local/qwen"]
context_window = 32768

[compaction]
threshold = 0.7

[subagents]
max_parallel = 2
max_depth = 1
run_command = true
max_rounds = 20

[permissions]
allow = ["run_command(git status)"]
ask = ["run_command(git push:*)"]
deny = ["run_command(rm:*)"]

[shell]
env_keep = ["GITHUB_TOKEN"]
env_drop = ["AWS_*"]

[http]
ca = "system"

[mcp.servers.git]
command = "uvx"
args = ["mcp-server-git"]
env = { GIT_PAGER = "cat" }
cwd = "~/src"
enabled = true
startup_timeout = 20
tool_timeout = 60
include = ["git_status"]
exclude = ["git_push"]

[mcp.servers.remote]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer x" }

[web]
allow_private = ["localhost:3000", "10.0.0.0/8"]
"""
    assert read_toml(write(tmp_path / "config.toml", text)) == tomllib.loads(text)


def toml_examples() -> list[tuple[str, str]]:
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S):
            found.append((doc.name, block))
    return found


@pytest.mark.parametrize(("doc", "block"), toml_examples())
def test_the_documented_examples_follow_the_schema(tmp_path: Path, doc: str, block: str) -> None:
    """Each ```toml block of the docs is read as what its first line says it is: a plan
    file (`# PLAN.toml`), the trust file, else a config file."""
    first = block.splitlines()[0]
    if "PLAN.toml" in first:
        from codecoder.plan.spec import load_plan

        load_plan(write(tmp_path / "PLAN.toml", block))
        return
    schema = "trusted" if "trusted.toml" in first else "config"
    read_toml(write(tmp_path / "example.toml", block), schema)


def test_project_files_follow_the_same_schema(tmp_path: Path) -> None:
    trust(tmp_path)
    local = write(tmp_path / ".codecoder" / "config.local.toml", "[permissions]\nalow = []\n")
    with pytest.raises(ConfigError, match=re.escape(f"{local}:2: unknown key `alow`")):
        RulePolicy.load(tmp_path)
    local.unlink()
    shared = write(tmp_path / ".codecoder" / "config.toml", "[permission]\n")
    with pytest.raises(ConfigError, match=re.escape(f"{shared}:1: unknown table [permission]")):
        RulePolicy.load(tmp_path)


def test_the_trust_file_has_its_own_schema(tmp_path: Path) -> None:
    from codecoder.permissions import is_trusted
    from codecoder.permissions.trust import trusted_file

    write(trusted_file(), 'folders = []\nfolder = ["/x"]\n')
    with pytest.raises(ConfigError, match=r"trusted\.toml:2: unknown key `folder`.*`folders`"):
        is_trusted(tmp_path)


def test_user_config_reads_the_xdg_file() -> None:
    assert user_config() == {}
    write(paths.config_dir() / "config.toml", 'model = "a/b"\n')
    assert user_config() == {"model": "a/b"}


def test_shell_settings_come_from_the_user_and_a_project_can_only_drop_more() -> None:
    user = {"shell": {"env_keep": ["GITHUB_TOKEN"], "env_drop": ["AWS_*"]}}
    project = {"shell": {"env_keep": ["OPENAI_API_KEY"], "env_drop": ["AWS_*", "NPM_TOKEN"]}}
    assert shell_settings(user, project) == ShellSettings(
        env_keep=("GITHUB_TOKEN",), env_drop=("AWS_*", "NPM_TOKEN")
    )
    assert shell_settings({}) == ShellSettings()


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ('a = 1\n[t]\n"quoted key" = 2\n', ("t", "quoted key"), 3),
        ('[t . "x.y"]\nk = 1\n', ("t", "x.y", "k"), 2),
        ("s = '''\n[t]\nk = 1\n'''\n[t]\nk = 2\n", ("t", "k"), 6),
        ('s = """a\\"""\nb"""\nk = 1\n', ("k",), 3),
        ("arr = [\n  1, # [t]\n  { x = 1 },\n]\nk = 2\n", ("k",), 5),
        ("arr = [\n  1,\n  { x = 1 },\n]\n", ("arr", 1, "x"), 3),
        ("[[h.pre]]\nc = 1\n[[h.pre]]\nc = 2\n", ("h", "pre", 1, "c"), 4),
        ("a.b.c = 1\n", ("a", "b"), 1),
        ("a = 1\n", ("nowhere",), None),
    ],
)
def test_locate_finds_the_line_of_a_key(text: str, path: tuple[str | int, ...], line: int) -> None:
    tomllib.loads(text)  # the cases are valid TOML
    assert locate(text, path) == line


def test_reading_a_valid_config_loads_nothing_heavy(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", '[permissions]\nallow = ["run_command(ls)"]\n')
    code = (
        "import sys, pathlib, codecoder.config as c;"
        f"c.read_toml(pathlib.Path({str(path)!r}));"
        "print(sorted({'difflib', 'codecoder.config_schema'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['codecoder.config_schema']"  # difflib only words an error


def test_the_schema_is_one_module_that_declares_every_table() -> None:
    declared = {f.name for f in config_schema.msgspec.structs.fields(config_schema.Config)}
    assert declared == {
        "model",
        "providers",
        "prices",
        "models",
        "compaction",
        "subagents",
        "permissions",
        "shell",
        "http",
        "sandbox",
        "mcp",
        "web",
        "record",
        "hooks",
        "undo",
        "daemon",
    }
