"""`codecoder mcp list | add | approve` (docs/mcp.md).

    codecoder mcp list [-C DIR]                 the servers a session there starts, each
                                                started (confined as a session would
                                                start it) to show its status and tools
    codecoder mcp add NAME [--env K=V]… -- CMD ARGS…   a stdio server in your config
    codecoder mcp add NAME --url URL [--header K=V]…   a streamable HTTP server
    codecoder mcp approve NAME [-C DIR]         run a project's server (this definition)

`add` writes `$XDG_CONFIG_HOME/codecoder/config.toml`: the new table is appended, the
result parsed back and checked against the schema before it replaces the file, so a
file that would not read back the same is never written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codecoder.exitcodes import EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from codecoder.mcp.manager import ServerInfo


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        help="MCP servers: list them, add one, approve a project's",
        description="Tools from MCP servers (docs/mcp.md).",
    )
    verbs = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    listing = verbs.add_parser("list", help="the servers, their status and tools")
    listing.add_argument("-C", "--cwd", default=".", help="the workspace (default: here)")
    listing.set_defaults(func=run_list)
    add = verbs.add_parser(
        "add",
        help="add a server to your config",
        usage="codecoder mcp add NAME [--env KEY=VALUE]… [--cwd DIR] -- COMMAND ARGS…\n"
        "       codecoder mcp add NAME --url URL [--header KEY=VALUE]…",
        description="Add [mcp.servers.NAME] to your config: a command run as a child "
        "process (after --) or a streamable HTTP server (--url).",
    )
    add.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    add.set_defaults(func=run_add)
    approve = verbs.add_parser(
        "approve", help="run a project server: approve its current definition"
    )
    approve.add_argument("name")
    approve.add_argument("-C", "--cwd", default=".", help="the workspace (default: here)")
    approve.set_defaults(func=run_approve)


def run_list(options: argparse.Namespace) -> int:
    from codecoder.app.wiring import WiringError
    from codecoder.config import ConfigError

    workspace = Path(options.cwd).expanduser().resolve()
    try:
        infos = statuses(workspace)
    except (ConfigError, WiringError) as exc:
        print(f"codecoder mcp: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if not infos:
        print("no MCP servers configured (add one: codecoder mcp add NAME -- COMMAND ARGS…)")
        return EXIT_OK
    for info in infos:  # a server's stderr, its tools, a project's command
        origin = "" if info.origin == "user" else f" ({info.origin})"
        where = f"  {info.where}" if info.where else ""
        lines = [f"{info.name}{origin}  {info.status}  {info.transport}{where}  {info.target}"]
        if info.tools:
            lines.append(f"    tools: {', '.join(info.tools)}")
        if info.detail:
            lines.append(f"    {info.detail}")
        for line in lines:
            print(visible(line, one_line=True))
    return EXIT_OK


def statuses(workspace: Path, wait_at_most: float | None = None) -> list[ServerInfo]:
    """The servers a session in `workspace` would start, each started as it would start
    them (confined alike) and waited for up to its startup_timeout (or `wait_at_most`),
    then stopped; those left out (a project's not approved, a disabled one) with why.
    `mcp list` and `doctor` show these. Raises ConfigError or WiringError."""
    from codecoder.app.options import AgentOptions
    from codecoder.app.wiring import build_sandbox
    from codecoder.config import user_config
    from codecoder.mcp.config import select
    from codecoder.mcp.manager import McpManager
    from codecoder.permissions.chain import RulePolicy
    from codecoder.permissions.trust import is_trusted

    user = user_config()
    project = _project(workspace) if is_trusted(workspace) else {}
    selection = select(workspace, user, project)
    if not selection.servers and not selection.left_out:
        return []
    sandbox = build_sandbox(AgentOptions(), user, RulePolicy.load(workspace))
    manager = McpManager(selection, sandbox=sandbox)
    manager.start()
    try:
        wait = max((s.startup_timeout for s in selection.servers), default=0)
        manager.wait_settled(wait if wait_at_most is None else min(wait, wait_at_most))
        return manager.statuses()
    finally:
        manager.close()
        sandbox.close()


def _add_options(words: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """NAME and the options before `--`, and the command after it (argparse alone would
    read the command's own options as ours)."""
    cut = words.index("--") if "--" in words else len(words)
    parser = argparse.ArgumentParser(prog="codecoder mcp add", add_help=False, exit_on_error=False)
    parser.add_argument("name")
    parser.add_argument("--url")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--cwd")
    usage = "usage: codecoder mcp add NAME [OPTIONS] -- COMMAND ARGS…"
    try:
        options, extra = parser.parse_known_args(words[:cut])
    except argparse.ArgumentError as exc:
        raise ValueError(f"{exc} ({usage})") from None
    if extra:
        raise ValueError(f"unknown {' '.join(extra)!r}: the command goes after -- ({usage})")
    return options, words[cut + 1 :]


def run_add(options: argparse.Namespace) -> int:
    from codecoder import paths
    from codecoder.config import ConfigError, read_toml
    from codecoder.mcp.config import servers_of

    try:
        options, command = _add_options(list(options.words))
        if bool(command) == bool(options.url):
            raise ValueError("give either -- COMMAND ARGS… or --url URL")
        table = _table(options, command)
        path = paths.config_dir() / "config.toml"
        before = read_toml(path)
        if options.name in before.get("mcp", {}).get("servers", {}):
            raise ConfigError(f"{path}: a server named {options.name!r} is already configured")
        servers_of({"mcp": {"servers": {options.name: table}}}, "user", str(path))  # checks
        _append(path, before, options.name, table)
    except (ConfigError, ValueError) as exc:
        print(f"codecoder mcp add: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"added MCP server {options.name!r} to {path}")
    print(f"  its tools are mcp__{options.name}__*: allow them with a rule such as")
    print(f'  [permissions] allow = ["mcp__{options.name}__*"] (docs/mcp.md)')
    return EXIT_OK


def run_approve(options: argparse.Namespace) -> int:
    from codecoder.config import ConfigError
    from codecoder.mcp.config import Approvals, servers_of
    from codecoder.permissions.trust import is_trusted

    workspace = Path(options.cwd).expanduser().resolve()
    source = str(workspace / ".codecoder" / "config.toml")
    try:
        found = [
            s
            for s in servers_of(_project(workspace), "project", source, workspace=str(workspace))
            if s.name == options.name
        ]
    except ConfigError as exc:
        print(f"codecoder mcp approve: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if not found:
        print(f"codecoder mcp approve: {workspace} has no project server {options.name!r}")
        return EXIT_USAGE
    (spec,) = found
    Approvals.load().approve(spec)
    print(visible(f"approved {spec.name} in {workspace}: {spec.describe()}", one_line=True))
    if spec.env:  # what the project's file says, shown as it is
        pairs = ", ".join(f"{k}={v}" for k, v in spec.env.items())
        print(visible(f"  with env: {pairs}", one_line=True))
    if not is_trusted(workspace):
        print("  this folder is not trusted: its servers start once you run `codecoder trust`")
    return EXIT_OK


def _project(workspace: Path) -> dict[str, Any]:
    from codecoder.config import Layers, read_toml

    folder = workspace / ".codecoder"
    return Layers(
        user={},
        project=read_toml(folder / "config.toml"),
        project_local=read_toml(folder / "config.local.toml"),
    ).merged()


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ValueError(f"{flag} takes KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def _table(options: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    if options.url:
        table["url"] = options.url
        if options.header:
            table["headers"] = _pairs(options.header, "--header")
        return table
    table["command"] = command[0]
    if command[1:]:
        table["args"] = command[1:]
    if options.env:
        table["env"] = _pairs(options.env, "--env")
    if options.cwd:
        table["cwd"] = options.cwd
    return table


def _append(path: Path, before: dict[str, Any], name: str, table: dict[str, Any]) -> None:
    """Append `[mcp.servers.NAME]` to the file, parse the result back and check it
    before replacing the file (ConfigError when it would not read back as meant)."""
    import tomllib

    from codecoder import config_schema
    from codecoder.permissions.tomlfile import atomic_write, toml_string

    lines = [f"[mcp.servers.{name}]"]  # a checked name is a bare key
    for key, value in table.items():
        if isinstance(value, str):
            lines.append(f"{key} = {toml_string(value)}")
        elif isinstance(value, list):
            lines.append(f"{key} = [{', '.join(toml_string(v) for v in value)}]")
        else:
            pairs = ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {pairs} }}")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    updated = (
        text
        + ("\n" if text and not text.endswith("\n") else "")
        + "\n".join(["", *lines, ""] if text else [*lines, ""])
    )
    expected = {**before, "mcp": {**before.get("mcp", {})}}
    expected["mcp"]["servers"] = {**expected["mcp"].get("servers", {}), name: table}
    try:
        after = tomllib.loads(updated)
        config_schema.check(after, updated, str(path), config_schema.Config)
    except (tomllib.TOMLDecodeError, config_schema.SchemaError) as exc:
        from codecoder.config import ConfigError

        raise ConfigError(f"{path}: cannot add the server automatically ({exc})") from exc
    if after != expected:
        from codecoder.config import ConfigError

        raise ConfigError(f"{path}: cannot add the server automatically; add it by hand")
    atomic_write(path, updated)
