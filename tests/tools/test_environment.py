"""What a command's environment holds: no secrets (by name, by provider, in URLs), the
user's `[shell] env_keep / env_drop`, and git kept inside the user's repository; pure
functions first, then real commands through run_command and real git."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.hostgit import repository_top
from codecoder.kernel.ports import ToolContext
from codecoder.tools.environment import (
    ChildEnvironment,
    add_git_safety,
    git_ceiling,
    is_secret_name,
    scrub,
    strip_url_credentials,
)
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand

pytestmark = pytest.mark.timeout(60)


# --- names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "PGPASSWORD",
        "MYSQL_PWD",
        "DB_PASSWD",
        "SMTP_PASSWORDS",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AZURE_CLIENT_SECRET",
        "GPG_PASSPHRASE",
        "STRIPE_APIKEY",
        "SSH_PRIVATEKEY",
        "SIGNING_KEYS",
        "apiKey",
        "openai_api_key",
        "npm_config__authToken",
        "npm_config_//registry.npmjs.org/:_authToken",
    ],
)
def test_names_that_hold_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "KEYBOARD",
        "XKB_DEFAULT_KEYMAP",
        "MONKEY_PATCH",
        "LESSKEY",
        "TOKENIZERS_PARALLELISM",
        "SECRETARY",
        "SSH_AUTH_SOCK",
        "GPG_TTY",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_KEY_12",
        "GIT_CONFIG_COUNT",
        "CODECODER_CALL",
    ],
)
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_name(name)


# --- values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "any_user", "expected"),
    [
        ("http://user:pa55@proxy.corp:3128", True, "http://proxy.corp:3128"),
        ("http://user:p@ss@proxy.corp:3128/", True, "http://proxy.corp:3128/"),
        ("https://ghp_token@proxy:8080", True, "https://proxy:8080"),
        ("socks5h://u:p@127.0.0.1:1080", True, "socks5h://127.0.0.1:1080"),
        ("http://proxy.corp:3128", True, "http://proxy.corp:3128"),
        ("postgres://app:hunter2@db:5432/app", False, "postgres://db:5432/app"),
        ("ssh://git@example.com/repo.git", False, "ssh://git@example.com/repo.git"),
        ("git@github.com:me/repo.git", False, "git@github.com:me/repo.git"),
        ("a http://u:p@x/ and https://v:q@y/", False, "a http://x/ and https://y/"),
        ("localhost,.corp,user@host", True, "localhost,.corp,user@host"),
        ("no url here", False, "no url here"),
    ],
)
def test_url_credentials_are_stripped(value: str, any_user: bool, expected: str) -> None:
    assert strip_url_credentials(value, any_user=any_user) == expected


def test_scrub_drops_secrets_and_provider_keys_and_keeps_the_rest() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "OPENAI_API_KEY": "sk-1",
        "GITHUB_TOKEN": "ghp_2",
        "MY_LLM": "custom-key-3",
        "KEYBOARD": "us",
        "SSH_AUTH_SOCK": "/run/agent.sock",
        "HTTPS_PROXY": "http://me:pw@proxy:3128",
        "all_proxy": "socks5://tok@proxy:1080",
        "DATABASE_URL": "postgres://app:hunter2@db/app",
    }
    out = scrub(environ, secret_names={"MY_LLM"})
    assert out == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "KEYBOARD": "us",
        "SSH_AUTH_SOCK": "/run/agent.sock",
        "HTTPS_PROXY": "http://proxy:3128",
        "all_proxy": "socks5://proxy:1080",
        "DATABASE_URL": "postgres://db/app",
    }


def test_keep_wins_over_the_scrub_and_drop_wins_over_keep() -> None:
    environ = {
        "PATH": "/usr/bin",
        "NPM_TOKEN": "n",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "HTTPS_PROXY": "http://me:pw@proxy:3128",
        "KUBECONFIG": "/k",
        "EDITOR": "vim",
    }
    out = scrub(
        environ,
        keep=["NPM_TOKEN", "AWS_*", "HTTPS_PROXY"],
        drop=["AWS_SECRET_*", "KUBE*", "EDITOR"],
    )
    assert out == {
        "PATH": "/usr/bin",
        "NPM_TOKEN": "n",
        "AWS_ACCESS_KEY_ID": "id",
        "HTTPS_PROXY": "http://me:pw@proxy:3128",  # kept: passed unchanged
    }
    assert scrub({"aws_x": "1"}, keep=["AWS_*"]) == {"aws_x": "1"}  # no rule: kept anyway
    assert scrub({"api_key": "1"}, keep=["API_KEY"]) == {}  # names are case sensitive


# --- git -----------------------------------------------------------------------------


def test_git_settings_are_appended_to_the_users_own() -> None:
    env = add_git_safety(
        {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "user.name",
            "GIT_CONFIG_VALUE_0": "Me",
            "GIT_CEILING_DIRECTORIES": "/srv",
        },
        Path("/home/me"),
    )
    assert env == {
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "Me",
        "GIT_CONFIG_KEY_1": "safe.bareRepository",
        "GIT_CONFIG_VALUE_1": "explicit",
        "GIT_CONFIG_KEY_2": "core.fsmonitor",
        "GIT_CONFIG_VALUE_2": "false",
        "GIT_CEILING_DIRECTORIES": "/home/me:/srv",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
    }
    assert add_git_safety({"GIT_CONFIG_COUNT": "x"}, Path("/"))["GIT_CONFIG_COUNT"] == "2"


def test_the_ceiling_is_above_the_repository_that_holds_the_workspace(tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "ws"
    repo = tmp_path / "repo"
    deep = repo / "src" / "pkg"
    plain.mkdir(parents=True)
    deep.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (deep / ".git").mkdir()  # empty: the sandbox's placeholder, which git skips too
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")  # a linked worktree
    assert repository_top(deep) == repo
    assert git_ceiling(deep) == tmp_path
    assert git_ceiling(repo) == tmp_path
    assert git_ceiling(worktree) == tmp_path
    assert repository_top(plain) is None  # (the temp folder is in no repository)
    assert git_ceiling(plain) == plain.parent


# --- real commands -------------------------------------------------------------------

SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai",
    "GITHUB_TOKEN": "ghp_test_github",
    "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
    "PGPASSWORD": "pg-test-password",
    "MY_LLM_CUSTOM": "custom-provider-key",
}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("https_proxy", "http://alice:proxy-pass@proxy.test:3128")
    monkeypatch.setenv("KEYBOARD_LAYOUT", "dvorak")
    return SECRETS


def run_in(manager: ProcessManager, ctx: ToolContext, command: str, cwd: str = ".") -> str:
    return RunCommand(manager).run({"command": command, "cwd": cwd}, ctx).text


@pytest.fixture
def manager() -> Iterator[ProcessManager]:
    manager = ProcessManager(
        grace=0.5, environment=ChildEnvironment(secret_names={"MY_LLM_CUSTOM"})
    )
    yield manager
    manager.close()


def test_an_allowed_env_shows_no_secret(
    manager: ProcessManager, ctx: ToolContext, secrets: dict[str, str]
) -> None:
    before = dict(os.environ)
    out = run_in(manager, ctx, "env")
    for name, value in secrets.items():
        assert name not in out and value not in out
    assert "proxy-pass" not in out and "alice" not in out
    assert "https_proxy=http://proxy.test:3128\n" in out
    assert "KEYBOARD_LAYOUT=dvorak\n" in out
    assert f"PATH={os.environ['PATH']}\n" in out
    assert dict(os.environ) == before  # the agent's own environment is untouched
    assert os.environ["OPENAI_API_KEY"] == "sk-test-openai"


def test_env_keep_and_env_drop(ctx: ToolContext, secrets: dict[str, str]) -> None:
    environment = ChildEnvironment(keep=["GITHUB_TOKEN", "AWS_*"], drop=["KEYBOARD_*"])
    manager = ProcessManager(grace=0.5, environment=environment)
    try:
        out = run_in(manager, ctx, "env")
    finally:
        manager.close()
    assert "GITHUB_TOKEN=ghp_test_github\n" in out
    assert "AWS_SECRET_ACCESS_KEY=aws-test-secret\n" in out
    assert "OPENAI_API_KEY" not in out and "PGPASSWORD" not in out
    assert "KEYBOARD_LAYOUT" not in out


def git(*args: str, cwd: Path) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def repo(workspace: Path) -> Path:
    git("init", "-q", "-b", "main", ".", cwd=workspace)
    (workspace / "notes.txt").write_text("one\n")
    (workspace / "src").mkdir()
    return workspace


def plant_worktree_repo(repo: Path) -> Path:
    """The issue's planted folder: HEAD, objects/, refs/heads/ and a config that asks git
    to run a program (fsmonitor) on status and diff."""
    sub = repo / "sub"
    (sub / "objects").mkdir(parents=True)
    (sub / "refs" / "heads").mkdir(parents=True)
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    (sub / "config").write_text(
        '[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch ../pwned; false"\n'
    )
    return sub


@pytest.mark.parametrize("command", ["git status", "git diff"])
def test_a_planted_git_dir_is_refused(
    manager: ProcessManager, ctx: ToolContext, repo: Path, command: str
) -> None:
    plant_worktree_repo(repo)
    out = run_in(manager, ctx, command, cwd="sub")
    # refused as a bare repository (diff, which may run outside one, says it is in none)
    assert "safe.bareRepository is 'explicit'" in out or "Not a git repository" in out
    assert not (repo / "pwned").exists()


def plant_bare_repo(repo: Path) -> Path:
    """A bare-looking folder with one commit, whose attributes and config make `git show`
    and `git log -p` run a program (a textconv driver): git 2.39 runs it by default."""
    sub = repo / "sub"
    git("init", "-q", "--bare", "-b", "main", str(sub), cwd=repo)
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    blob = subprocess.run(
        ["git", "--git-dir", str(sub), "hash-object", "-w", "--stdin"],
        input="hello\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = subprocess.run(
        ["git", "--git-dir", str(sub), "mktree"],
        input=f"100644 blob {blob}\tf.txt\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    commit = git("--git-dir", str(sub), *ident, "commit-tree", "-m", "one", tree, cwd=repo)
    git("--git-dir", str(sub), "update-ref", "refs/heads/main", commit.strip(), cwd=repo)
    (sub / "info").mkdir(exist_ok=True)
    (sub / "info" / "attributes").write_text("* diff=planted\n")
    (sub / "config").write_text(
        '[core]\n\tbare = true\n[diff "planted"]\n\ttextconv = "touch ../pwned; cat"\n'
    )
    return sub


@pytest.mark.parametrize("command", ["git show", "git log -p"])
def test_a_planted_bare_repo_runs_nothing(
    manager: ProcessManager, ctx: ToolContext, repo: Path, command: str
) -> None:
    plant_bare_repo(repo)
    out = run_in(manager, ctx, command, cwd="sub")
    assert "cannot use bare repository" in out
    assert not (repo / "pwned").exists()


def test_git_still_finds_the_users_repository(
    manager: ProcessManager, ctx: ToolContext, repo: Path
) -> None:
    out = run_in(manager, ctx, "git status --short")
    assert out == "?? notes.txt\n[exit code 0]"
    (repo / "src" / "deep").mkdir()
    out = run_in(manager, ctx, "git rev-parse --show-toplevel", cwd="src/deep")
    assert out == f"{repo.resolve()}\n[exit code 0]"
    out = run_in(manager, ctx, "git -c safe.bareRepository=all config safe.bareRepository")
    assert out == "all\n[exit code 0]"  # a user's own `-c` still decides (policy's business)


def test_discovery_never_climbs_above_the_users_repository(
    manager: ProcessManager, ctx: ToolContext, workspace: Path
) -> None:
    git("init", "-q", ".", cwd=workspace.parent)  # a repository above (a home in git)
    git("init", "-q", ".", cwd=workspace)
    out = run_in(manager, ctx, "git rev-parse --show-toplevel")
    assert out == f"{workspace.resolve()}\n[exit code 0]"
    (workspace / ".git").rename(workspace / "old-git")  # the model hides the user's repo
    out = run_in(manager, ctx, "git rev-parse --show-toplevel")
    assert "not a git repository" in out
