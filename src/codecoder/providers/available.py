"""Which models can be used now: the choices `/model` offers first.

A provider that needs a key is usable when its key (or bearer token) is in the
environment; one that needs none (ollama, a `[providers.NAME]` server without
`api_key_env`) when something listens at its address. The check is a TCP connect with a
short timeout, run for all such servers at once: `/model` must answer at a keystroke's
pace, and a model whose server is down or whose key is missing would only fail at the next
turn. A model not usable now is still a choice, on request, with why it is not.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from codecoder.providers.pricing import price_table
from codecoder.providers.registry import (
    ProviderSettings,
    all_providers,
    base_url,
    default_model,
    key_status,
)

PROBE_TIMEOUT = 0.3
"""Seconds a keyless provider's server has to accept a connection."""


class ModelChoice(NamedTuple):
    spec: str
    why_not: str
    """Why it cannot be used now ("OPENAI_API_KEY is not set"); empty when it can."""


def known_models(
    config: Mapping[str, Any], providers: Mapping[str, ProviderSettings] | None = None
) -> list[str]:
    """Every `provider/model` the config knows of: priced ones, those a provider lists
    and the default model (`providers`: all_providers(config), when already at hand)."""
    providers = all_providers(config) if providers is None else providers
    specs = [spec for spec in price_table(config) if not spec.endswith("/*")]
    specs += [f"{name}/{model}" for name, p in providers.items() for model in p.models]
    default = default_model(config)
    return sorted({*specs, *([default] if default else [])})


def model_choices(
    config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    timeout: float = PROBE_TIMEOUT,
) -> list[ModelChoice]:
    """Every known model with why it cannot be used now, the usable ones first."""
    env = os.environ if environ is None else environ
    providers = all_providers(config)
    why = provider_status(providers, env, timeout=timeout)
    choices = [
        ModelChoice(spec, why.get(spec.partition("/")[0], "no such provider"))
        for spec in known_models(config, providers)
    ]
    return sorted(choices, key=lambda choice: (bool(choice.why_not), choice.spec))


def provider_status(
    providers: Mapping[str, ProviderSettings],
    environ: Mapping[str, str],
    *,
    timeout: float = PROBE_TIMEOUT,
) -> dict[str, str]:
    """Provider name → why it cannot be used now ("" when it can)."""
    status: dict[str, str] = {}
    keyless = []
    for name, settings in providers.items():
        if settings.api_key_env is None:
            keyless.append(settings)
        elif key_status(settings, environ) == "set":
            status[name] = ""
        else:
            status[name] = f"{settings.api_key_env} is not set"

    def probe(settings: ProviderSettings) -> None:
        url = base_url(settings, environ)
        status[settings.name] = "" if _listens(url, timeout) else f"no server at {url}"

    threads = [threading.Thread(target=probe, args=(s,), daemon=True) for s in keyless]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return status


def _listens(url: str, timeout: float) -> bool:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname
        if not host:
            return False
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False
