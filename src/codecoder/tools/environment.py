"""The environment a command of `run_command` sees: the agent's own, without its secrets,
plus settings that keep git inside the user's repository (docs/permissions.md, "The
environment commands see").

Secrets. Whatever a command can read, the model can read (`env` is one allowed command
away), so the child does not inherit:

- variables whose name has a part (split at `_`, any case) that is KEY, TOKEN, SECRET,
  PASSWORD, PASSWD or CREDENTIAL, or one of those with an S, or a part ending in TOKEN,
  SECRET, PASSWORD, PASSWD, PASSPHRASE or CREDENTIAL (PGPASSWORD, authToken), or KEYs such as
  APIKEY and ACCESSKEY; and PWD as a part of a longer name (MYSQL_PWD). A part that only
  starts with a word is no match, so KEYBOARD, KEYMAP, MONKEY and TOKENIZERS_PARALLELISM
  stay, and GIT_CONFIG_KEY_<n> (config names that pair with GIT_CONFIG_VALUE_<n>) stays.
- the variables that hold the keys of the configured providers (`api_key_env`, whatever
  their names), passed in as `secret_names`.
- the credentials of a URL: `scheme://user:password@` loses its `user:password@` in every
  value (DATABASE_URL, REDIS_URL…), and in proxy variables (names ending in `proxy`, any
  case) any `user@` goes too. The proxy variable itself stays: its host and port are no
  secret, a proxy that needs no login keeps working, and one that does answers 407, which
  names the problem, where dropping the variable would send traffic around the proxy.

Kept on purpose: SSH_AUTH_SOCK and other agent sockets. They are paths, not secrets: a
command can ask the agent to sign (which is how `git push` over ssh works) but never read
a key out of it. What a command may do is the policy's question (and the sandbox's).

The user adjusts this with `[shell] env_keep` and `env_drop` (names or `*` globs, case
sensitive as names are): a kept name passes unchanged, a dropped one never passes, and
drop wins over keep where both match.

Git. Every child also gets:

- `GIT_CEILING_DIRECTORIES` = the parent of the repository that holds the workspace (or of
  the workspace itself outside one): git's discovery stops there, never reaching a
  repository above the user's.
- git config of the command-line scope (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`, appended to
  any the user set): `safe.bareRepository=explicit`, so a folder the model made to look
  like a git dir (HEAD, objects/, refs/, config) is refused instead of used, and
  `core.fsmonitor=false`, so no repository config can name a program for git to run
  on `status` or `diff`. Command-line scope outranks every config file.
- `GIT_PAGER=cat`, `GIT_EDITOR=true`, `GIT_SEQUENCE_EDITOR=true`: no pager or editor
  named in a config file runs, and nothing waits for one (stdin is closed anyway).

The environment is built from `os.environ` at each command, never changing the agent's
own: ~0.05-0.1 ms, of which copying `os.environ` (what a command cost before) is about
half (bench/bench_commands.py). Finding the repository is a walk up the folders for a
`.git` entry, no subprocess, done once per workspace on its first command (~0.05 ms).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

_SECRET_PART = r"""(?x)
    (KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)S?      # the word itself
    | .*(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL)S?  # glued: PGPASSWORD
    | (API|ACCESS|SECRET|PRIVATE|AUTH|MASTER|SIGNING|ENCRYPTION|LICENSE)KEYS?
"""
_NOT_SECRET = r"GIT_CONFIG_KEY_\d+"
_WORD_BREAK = r"[_\W]+"
_URL_USERINFO = r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#,;\s]*)@"

GIT_SETTINGS = (("safe.bareRepository", "explicit"), ("core.fsmonitor", "false"))
GIT_PROGRAMS = {"GIT_PAGER": "cat", "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"}


class _Patterns:
    """The regular expressions, compiled at the first command rather than at import
    (that was 0.8 ms of every run's start-up)."""

    def __init__(self) -> None:
        self.secret_part = re.compile(_SECRET_PART)
        self.not_secret = re.compile(_NOT_SECRET)
        self.word_break = re.compile(_WORD_BREAK)
        self.url_userinfo = re.compile(_URL_USERINFO)


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


@functools.lru_cache(maxsize=4096)  # the same few names at every command
def is_secret_name(name: str) -> bool:
    """Whether the variable's name says it holds a secret (see the module docstring)."""
    patterns = _patterns()
    if patterns.not_secret.fullmatch(name):
        return False
    parts = [part for part in patterns.word_break.split(name.upper()) if part]
    if len(parts) > 1 and "PWD" in parts:
        return True
    # camelCase names (authToken) are one part upper-cased: AUTHTOKEN ends in TOKEN.
    return any(patterns.secret_part.fullmatch(part) for part in parts)


def is_proxy_name(name: str) -> bool:
    return name[-5:].lower() == "proxy"


def strip_url_credentials(value: str, *, any_user: bool = False) -> str:
    """`value` with the `user:password@` of every URL in it removed (with `any_user`, a
    bare `user@` too)."""
    if "@" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        if any_user or ":" in match["userinfo"]:
            return match["scheme"]
        return match[0]

    return _patterns().url_userinfo.sub(replace, value)


def _matcher(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for a list of names and `*` globs; None for an empty list."""
    patterns = list(patterns)
    if not patterns:
        return None
    import fnmatch

    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def scrub(
    environ: Mapping[str, str],
    *,
    keep: Sequence[str] = (),
    drop: Sequence[str] = (),
    secret_names: Iterable[str] = (),
) -> dict[str, str]:
    """A copy of `environ` without secrets: drop wins, then keep, then the default rules."""
    kept, dropped = _matcher(keep), _matcher(drop)
    providers = secret_names if isinstance(secret_names, frozenset) else frozenset(secret_names)
    out: dict[str, str] = {}
    for name, value in environ.items():
        if dropped is not None and dropped.match(name):
            continue
        if kept is not None and kept.match(name):
            out[name] = value
            continue
        if name in providers or is_secret_name(name):
            continue
        out[name] = strip_url_credentials(value, any_user=is_proxy_name(name))
    return out


def git_ceiling(workspace: Path) -> Path:
    """The folder git's discovery must not enter: the parent of the workspace's
    repository, or of the workspace when it is in none."""
    from codecoder.hostgit import repository_top

    top = repository_top(workspace) or workspace
    return top.parent


def add_git_safety(environ: dict[str, str], ceiling: Path) -> dict[str, str]:
    """Add the git settings of the module docstring to `environ` (changed in place)."""
    ceilings = environ.get("GIT_CEILING_DIRECTORIES")
    environ["GIT_CEILING_DIRECTORIES"] = f"{ceiling}:{ceilings}" if ceilings else str(ceiling)
    count_text = environ.get("GIT_CONFIG_COUNT", "0")
    count = int(count_text) if count_text.isdigit() else 0  # git itself refuses a bad count
    for offset, (key, value) in enumerate(GIT_SETTINGS):
        environ[f"GIT_CONFIG_KEY_{count + offset}"] = key
        environ[f"GIT_CONFIG_VALUE_{count + offset}"] = value
    environ["GIT_CONFIG_COUNT"] = str(count + len(GIT_SETTINGS))
    environ.update(GIT_PROGRAMS)
    return environ


class ChildEnvironment:
    """What commands get: `os.environ` (or `base`) at each command, scrubbed, plus the git
    settings for the command's workspace. Shared by every command of an application (the
    ProcessManager holds it), so sub-agents' commands get the same. `secret_names` may be
    a function, called once, at the first command (finding the providers' key variables
    costs imports that a run without commands need not pay)."""

    def __init__(
        self,
        *,
        keep: Sequence[str] = (),
        drop: Sequence[str] = (),
        secret_names: Iterable[str] | Callable[[], Iterable[str]] = (),
        base: Mapping[str, str] | None = None,
    ) -> None:
        self.keep = tuple(keep)
        self.drop = tuple(drop)
        self._secret_names = secret_names
        self._base = base
        self._lock = threading.Lock()
        self._names: frozenset[str] | None = None
        self._ceilings: dict[Path, Path] = {}

    def for_workspace(self, workspace: Path) -> dict[str, str]:
        environ = os.environ if self._base is None else self._base
        env = scrub(environ, keep=self.keep, drop=self.drop, secret_names=self.secret_names())
        return add_git_safety(env, self.ceiling(workspace))

    def secret_names(self) -> frozenset[str]:
        with self._lock:
            if self._names is None:
                names = self._secret_names
                self._names = frozenset(names() if callable(names) else names)
            return self._names

    def ceiling(self, workspace: Path) -> Path:
        with self._lock:
            found = self._ceilings.get(workspace)
        if found is None:
            found = git_ceiling(Path(os.path.realpath(workspace)))
            with self._lock:
                self._ceilings[workspace] = found
        return found
