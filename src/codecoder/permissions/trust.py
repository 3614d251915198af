"""Which folders' `.codecoder/` settings are applied (`$XDG_CONFIG_HOME/codecoder/trusted.toml`),
and which of a trusted folder's allow rules (`$XDG_DATA_HOME/codecoder/rule-approvals.json`).

A repository is untrusted input: its `.codecoder/config.toml` could grant the agent any
right. So project settings apply only to a folder the user has trusted, recorded by real
path (a symlink to a trusted folder is the same folder; a copy elsewhere is not). Trust
is per folder, not inherited by subfolders: trust the folder you run in.

Trust alone does not pin what the folder's files say, and a `git pull` (or a command the
agent ran) can add `allow = ["unsandboxed"]` to them later. So a project's allow rules
(`config.toml` and `config.local.toml` together) apply only as the set the user approved,
by digest, like a project's hooks and MCP servers: `codecoder trust` approves the set as
it is then, and a set changed since applies none of its allow rules until the user runs
it again; the session says so. An "always, this project" answer approves the set it
writes, when the set was approved before. Ask and deny rules only take rights away, so
they apply unapproved; but the allow set was approved beside them, so one of them removed
since (`allow = ["run_command"]` approved with `deny = ["run_command(rm:*)"]`) is a
changed set too: the approval records them, and more of them changes nothing.

`codecoder trust [DIR]` and `codecoder untrust [DIR]` edit the trust file; by hand it reads

    folders = [
        "/home/me/src/project",
    ]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from codecoder import approval_store, paths
from codecoder.config import read_toml
from codecoder.permissions.rules import Rule, RuleSet, parse_table

PROJECT_FILES = ("config.toml", "config.local.toml")


def trusted_file() -> Path:
    return paths.config_dir() / "trusted.toml"


def trusted_folders() -> tuple[str, ...]:
    return tuple(read_toml(trusted_file(), "trusted").get("folders", []))


def is_trusted(workspace: Path) -> bool:
    return str(workspace.resolve()) in trusted_folders()


def trust(workspace: Path) -> bool:
    """Record the folder as trusted; False when it already was. The file is rewritten
    atomically. The folder's allow rules apply once approved (`approve_rules`)."""
    folders = trusted_folders()
    real = str(workspace.resolve())
    if real in folders:
        return False
    _write((*folders, real))
    return True


def untrust(workspace: Path) -> bool:
    """Forget the folder; False when it was not trusted."""
    folders = trusted_folders()
    real = str(workspace.resolve())
    if real not in folders:
        return False
    _write(tuple(folder for folder in folders if folder != real))
    return True


def _write(folders: tuple[str, ...]) -> None:
    from codecoder.permissions.tomlfile import atomic_write, toml_string

    lines = "".join(f"    {toml_string(folder)},\n" for folder in folders)
    text = (
        "# Folders whose .codecoder/ settings CodeCoder applies (real paths).\n"
        "# Edit with `codecoder trust DIR` and `codecoder untrust DIR`.\n"
        f"folders = [\n{lines}]\n"
    )
    atomic_write(trusted_file(), text)


# --- the project's allow rules, pinned ---------------------------------------------


def project_rules(workspace: Path) -> RuleSet:
    """The `[permissions]` of both project files, as written (approved or not). Raises
    ConfigError for a file that cannot be read."""
    folder = paths.project_dir(workspace)
    sets = []
    for name in PROJECT_FILES:
        source = folder / name
        sets.append(parse_table(read_toml(source).get("permissions"), str(source)))
    return RuleSet(
        allow=sets[0].allow + sets[1].allow,
        ask=sets[0].ask + sets[1].ask,
        deny=sets[0].deny + sets[1].deny,
    )


def applied_rules(workspace: Path, rules: RuleSet) -> tuple[RuleSet, str | None]:
    """What of a trusted folder's `rules` applies: all of them when the allow set is the
    one approved (or empty), else the ask and deny rules only, with the line that says
    why."""
    if not rules.allow:
        return rules, None
    approved = Approvals.load()
    real = str(workspace.resolve())
    if approved.has(real, rules):
        return rules, None
    what = "changed since you approved them" if approved.known(real) else "not approved yet"
    texts = ", ".join(dict.fromkeys(rule.text for rule in rules.allow))
    notice = (
        f"the project's allow rules are not applied ({what}): {texts}; check them in "
        f"{paths.project_dir(workspace)} and run `codecoder trust` to apply them"
    )
    return RuleSet(ask=rules.ask, deny=rules.deny), notice


def approve_rules(workspace: Path, rules: RuleSet) -> None:
    """Approve exactly this allow set, beside these ask and deny rules, for the folder
    (its earlier approval is replaced)."""
    Approvals.load().approve(str(workspace.resolve()), rules)


def approve_project(workspace: Path) -> list[str]:
    """Approve the folder's allow rules as its files hold them now (what trusting it
    does); the rules approved. Raises ConfigError for a file that cannot be read."""
    rules = project_rules(workspace)
    if rules.allow:
        approve_rules(workspace, rules)
    return list(dict.fromkeys(rule.text for rule in rules.allow))


def approved(workspace: Path, rules: RuleSet) -> bool:
    """Whether these rules' allow set applies as it is: empty, or the one approved (and
    no ask or deny rule approved beside it is gone)."""
    return not rules.allow or Approvals.load().has(str(workspace.resolve()), rules)


def approvals_file() -> Path:
    return paths.data_dir() / "rule-approvals.json"


def _digest(workspace: str, allow: Sequence[Rule]) -> str:
    """What an approval is given to: the folder and the set of allow rules' texts (in
    which file, in which order or how often a rule is written changes nothing allowed)."""
    return approval_store.digest([workspace, sorted({rule.text for rule in allow})])


class Approval(msgspec.Struct, frozen=True):
    workspace: str
    digest: str
    allow: list[str]
    """The rules approved, for a person reading the file."""
    ask: list[str] = []
    deny: list[str] = []
    """The ask and deny rules beside them when they were approved: the set applies while
    each of these still stands (an approval written before they were kept has none)."""


class Approvals(approval_store.Store[Approval]):
    """The project allow sets the user approved: one entry per folder."""

    file = staticmethod(approvals_file)

    def has(self, workspace: str, rules: RuleSet) -> bool:
        digest = _digest(workspace, rules.allow)
        ask, deny = _texts(rules.ask), _texts(rules.deny)
        return any(
            e.workspace == workspace
            and e.digest == digest
            and set(e.ask) <= set(ask)
            and set(e.deny) <= set(deny)
            for e in self.entries
        )

    def known(self, workspace: str) -> bool:
        """Whether some allow set of this folder was approved before (so it changed)."""
        return any(e.workspace == workspace for e in self.entries)

    def approve(self, workspace: str, rules: RuleSet) -> None:
        """Record the set as the folder's approved one and write the file atomically."""
        digest = _digest(workspace, rules.allow)
        entry = Approval(
            workspace, digest, _texts(rules.allow), _texts(rules.ask), _texts(rules.deny)
        )
        self.entries = [*(e for e in self.entries if e.workspace != workspace), entry]
        self.save()


def _texts(rules: Sequence[Rule]) -> list[str]:
    return sorted({rule.text for rule in rules})
