"""`codecoder models` (what is configured) and `codecoder doctor` (is it usable).

Both read the user's config layer only: provider settings and API keys are the user's,
never a project's. Registering the subcommands imports nothing else: every `codecoder`
run but `exec` registers them, and start-up time is measured.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from codecoder.providers.pool import TrustStore
    from codecoder.providers.registry import ProviderSettings


def add_parsers(subparsers: Any) -> None:
    """Register `models` and `doctor` on the CLI's subparsers (each sets `func`)."""
    models = subparsers.add_parser("models", help="list configured providers and models")
    models.set_defaults(func=run_models)
    doctor = subparsers.add_parser(
        "doctor",
        help="check the providers (API key, server), the sandbox, the MCP servers and the "
        "daemon; exit 1 when what is in use fails",
    )
    doctor.add_argument(
        "--timeout", type=float, default=3.0, help="seconds to wait for each server (default 3)"
    )
    doctor.set_defaults(func=run_doctor)


def _load(args: argparse.Namespace) -> tuple[Mapping[str, Any], dict[str, ProviderSettings]] | None:
    """The user config and every provider; None (said on stderr) when the config is broken."""
    from codecoder.config import ConfigError, load_layers
    from codecoder.kernel.ports import ProviderError
    from codecoder.providers.registry import all_providers

    workspace = Path(getattr(args, "cwd", None) or ".")
    try:
        config = load_layers(workspace, trusted=False).user
        return config, all_providers(config)
    except (ConfigError, ProviderError) as exc:
        print(f"codecoder: {exc}", file=sys.stderr)
        return None


def run_models(args: argparse.Namespace) -> int:
    from codecoder.providers import registry

    loaded = _load(args)
    if loaded is None:
        return 2
    config, providers = loaded
    default = registry.default_model(config)
    hint = '(none: set model = "provider/model" in config.toml)'
    print(f"default model: {default or hint}")
    print()
    print(f"{'PROVIDER':<12} {'WIRE':<10} {'KEY':<32} BASE URL")
    for name, settings in providers.items():
        key = _key_label(settings)
        print(f"{name:<12} {settings.wire:<10} {key:<32} {registry.base_url(settings, os.environ)}")
    print()
    from codecoder.providers.available import known_models

    for spec in known_models(config, providers):
        print(f"  {spec}{'  (default)' if spec == default else ''}")
    return 0


def _key_label(settings: ProviderSettings) -> str:
    from codecoder.providers import registry

    status = registry.key_status(settings, os.environ)
    return "no key needed" if status == "not needed" else f"{settings.api_key_env} {status}"


class Check(NamedTuple):
    ok: bool
    detail: str


MAX_TIMEOUT = 600.0


def run_doctor(args: argparse.Namespace) -> int:
    """Check every provider, the sandbox, the MCP servers and the daemon; exit 1 only
    when something in use fails: the default model's provider (without a default
    model, when no provider is usable at all), a sandbox `[sandbox] mode` asks for, an
    MCP server a session here would start, a daemon that holds its lock but does not
    answer. The rest is listed as `off` when it fails: a key set for another tool, a
    `[providers.NAME]` table kept for later, are no reason for a failing check."""
    timeout = float(getattr(args, "timeout", 3.0))
    if not 0 < timeout <= MAX_TIMEOUT:  # NaN is neither
        print(
            f"codecoder doctor: --timeout must be above 0 and at most {MAX_TIMEOUT:g} seconds",
            file=sys.stderr,
        )
        return 2
    loaded = _load(args)
    if loaded is None:
        return 2
    config, providers = loaded
    from codecoder.providers import registry
    from codecoder.providers.pool import TrustStore

    trust = TrustStore(registry.http_ca(config))  # checked when read; one TLS context for all
    results: dict[str, Check] = {}
    threads = [
        threading.Thread(target=_check_into, args=(settings, timeout, results, trust), daemon=True)
        for settings in providers.values()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    used = _in_use(config)
    for name in providers:
        check = results[name]
        mark = "ok" if check.ok else "FAIL" if name in used else "off"
        note = "" if check.ok or name in used else " (not in use)"
        _say(f"{mark:<5} {name:<12} {check.detail}{note}")
    for name in sorted(used - set(providers)):
        _say(f"{'FAIL':<5} {name:<12} no such provider (the default model names it)")
    sandbox_ok = _report_sandbox(config)
    _report_checkpoints(config)
    mcp_ok = _report_mcp(Path.cwd(), timeout)
    daemon_ok = _report_daemon()
    failed = [name for name in used if name not in results or not results[name].ok]
    if not used and not any(check.ok for check in results.values()):
        print(
            "codecoder doctor: no provider is usable: set an API key (e.g. ANTHROPIC_API_KEY) "
            "or add a [providers.NAME] table to config.toml",
            file=sys.stderr,
        )
        return 1
    return 1 if failed or not (sandbox_ok and mcp_ok and daemon_ok) else 0


MCP_WAIT = 30.0
"""Seconds doctor waits at most for the MCP servers to start (each has its own
startup_timeout, 10 s by default; one that needs longer is not ready in a session
either, but doctor must not hang on it)."""


def _report_mcp(workspace: Path, timeout: float) -> bool:
    """Start the servers a session here would start, as it would (mcp_cmd.statuses),
    and say which are ready; a project's server that is not approved is not started
    (approving runs its command: doctor says how). False when a server a session would
    start fails."""
    from codecoder.app.wiring import WiringError
    from codecoder.cli.mcp_cmd import statuses
    from codecoder.config import ConfigError

    try:
        infos = statuses(workspace, wait_at_most=max(timeout, MCP_WAIT))
    except (ConfigError, WiringError) as exc:
        _say(f"{'FAIL':<5} {'mcp':<12} {exc}")
        return False
    if not infos:
        _say(f"{'off':<5} {'mcp':<12} no MCP servers configured")
        return True
    ok = True
    for info in infos:
        name = f"mcp {info.name}"
        origin = "" if info.origin == "user" else f" ({info.origin})"
        if info.status == "ready":
            tools = f"{len(info.tools)} tool{'' if len(info.tools) == 1 else 's'}"
            _say(f"{'ok':<5} {name:<12} ready{origin}, {tools} ({info.target})")
        elif info.status in ("not started", "disabled"):
            hint = f"; run `codecoder mcp approve {info.name}`" if "approv" in info.detail else ""
            _say(f"{'off':<5} {name:<12} {info.status}{origin}: {info.detail}{hint}")
        else:
            ok = False
            what = "not ready in time" if info.status == "starting" else info.status
            detail = f": {info.detail}" if info.detail else ""
            _say(f"{'FAIL':<5} {name:<12} {what}{origin} ({info.target}){detail}")
    return ok


def _report_daemon() -> bool:
    """Whether a daemon serves sessions here (`codecoder daemon status`'s probe); False
    only for one that holds its lock and does not answer."""
    from codecoder.daemon.control import probe

    running, detail = probe()
    mark = "ok" if running else "off" if running is None else "FAIL"
    _say(f"{mark:<5} {'daemon':<12} {detail}")
    return running is not False


def _report_sandbox(config: Mapping[str, Any]) -> bool:
    """Print whether commands can be confined here (docs/sandbox.md) and why not; False
    when `[sandbox] mode` asks for a sandbox that cannot run (every run would stop)."""
    from pathlib import Path

    from codecoder.sandbox.probe import checked, find, version

    found = checked(find((Path.cwd(),)))  # not a bwrap a command left in this folder
    table = config.get("sandbox")
    wanted = table.get("mode") if isinstance(table, dict) else None
    if found.works and found.path is not None:
        named = version(found.path) or "bubblewrap"
        _say(f"{'ok':<5} {'sandbox':<12} {named} ({found.path}) confines commands")
        return True
    if wanted in ("workspace-write", "read-only"):
        _say(f"{'FAIL':<5} {'sandbox':<12} {found.detail} ([sandbox] mode = {wanted!r})")
        return False
    _say(f"{'off':<5} {'sandbox':<12} {found.detail} (full-auto runs parser-only)")
    return True


def _say(line: str) -> None:
    """A line of the report: what it quotes (a server's answer, bwrap's stderr or
    version, a name from the config) is shown as it is, never obeyed."""
    print(visible(line, one_line=True))


def _report_checkpoints(config: Mapping[str, Any]) -> None:
    """Print how much the checkpoint stores take (docs/undo.md): outside the workspace,
    on the user's disk, where nobody looks."""
    from codecoder import paths
    from codecoder.checkpoints.objects import MB, store_dir
    from codecoder.checkpoints.prune import size_of
    from codecoder.config_schema import UndoTable, section

    limits = section(config, "undo", UndoTable)
    everything = paths.data_dir() / "checkpoints"
    stores = len(list(everything.iterdir())) if everything.is_dir() else 0
    here = size_of(store_dir(Path.cwd()))
    _say(
        f"{'ok':<5} {'checkpoints':<12} {size_of(everything) / MB:.1f} MB in {stores} "
        f"workspace store(s) ({everything}), {here / MB:.1f} MB this folder's; each is "
        f"kept under {limits.max_store_mb} MB ([undo] max_store_mb)"
    )


def _in_use(config: Mapping[str, Any]) -> set[str]:
    """The providers whose failure counts: the default model's, which every session
    without `-m` uses. Without a default model none is (run_doctor then asks that one
    provider be usable at all)."""
    from codecoder.providers import registry

    default = registry.default_model(config)
    return {default.partition("/")[0]} if default else set()


def _check_into(
    settings: ProviderSettings, timeout: float, out: dict[str, Check], trust: TrustStore
) -> None:
    try:
        out[settings.name] = check_provider(settings, timeout, os.environ, trust)
    except Exception as exc:  # a check's own failure is a failed check, not a traceback
        out[settings.name] = Check(False, f"the check failed: {exc!r}")


def check_provider(
    settings: ProviderSettings,
    timeout: float,
    environ: Mapping[str, str],
    trust: TrustStore | None = None,
) -> Check:
    """The key is there, and the server answers its model list within `timeout`."""
    from codecoder.kernel.ports import ProviderError
    from codecoder.providers import registry
    from codecoder.providers.http import HttpClient, Timeouts

    try:
        api_key, env_headers = registry.credentials(settings, environ)
    except ProviderError as exc:
        return Check(False, exc.message)
    wire = registry.wire_format(settings.wire)
    url = registry.base_url(settings, environ)
    headers = {**wire.auth_headers(api_key), **env_headers, **settings.headers}
    timeouts = Timeouts(connect=timeout, read=timeout, write=timeout)
    http = HttpClient(url, timeouts=timeouts, trust=trust)
    started = time.perf_counter()
    try:
        status, _ = http.get(wire.models_path, headers=headers)
    except ProviderError as exc:
        return Check(False, f"unreachable: {exc.message}")
    finally:
        http.close()
    millis = (time.perf_counter() - started) * 1000
    if status in (401, 403):
        return Check(False, f"key rejected (HTTP {status}) by {url}")
    if status >= 400:
        return Check(True, f"reachable, but {wire.models_path} answered HTTP {status} ({url})")
    return Check(True, f"reachable ({url}, {millis:.0f} ms)")
