"""Model spec `provider/model` → a configured `WireClient` (DESIGN.md §4, §7).

Built-in providers (their settings can be overridden, field by field, in config):

    name        wire        base URL                         key variable
    openai      responses   https://api.openai.com/v1        OPENAI_API_KEY
    anthropic   anthropic   https://api.anthropic.com        ANTHROPIC_API_KEY
    ollama      chat        http://localhost:11434/v1        (none)
    openrouter  chat        https://openrouter.ai/api/v1     OPENROUTER_API_KEY
    deepseek    chat        https://api.deepseek.com         DEEPSEEK_API_KEY

openai speaks Responses, as OpenAI's own agent (Codex) does: reasoning items carry over
between rounds there, which Chat Completions cannot do. Set `wire = "chat"` under
`[providers.openai]` for an OPENAI_BASE_URL server that only has /chat/completions.

As the official SDKs do, OPENAI_BASE_URL and ANTHROPIC_BASE_URL replace the default base
URL (a `base_url` in config replaces both), ANTHROPIC_AUTH_TOKEN is sent as a bearer
token when ANTHROPIC_API_KEY is unset, OPENAI_ORG_ID / OPENAI_PROJECT_ID become headers.
For Anthropic the base URL is the host: `/v1/messages` is appended, as the SDK does.

Config (user layer):

    model = "anthropic/claude-sonnet-4-5"          # the default model

    [providers.lmstudio]                            # any other server
    base_url = "http://localhost:1234/v1"
    wire = "chat"                                   # chat | responses | anthropic
    api_key_env = "LMSTUDIO_KEY"                    # omit when no key is needed
    models = ["qwen3-coder-30b"]                    # listed by `codecoder models`
    max_tokens = 8192                               # also: reasoning_effort,
    headers = { "X-Team" = "tools" }                #   thinking_budget, extra_body

    [prices."lmstudio/qwen3-coder-30b"]             # $ per million tokens (see pricing)
    input = 0.0
    output = 0.0

    [http]
    ca = "system"                                   # the OS certificate store; "certifi":
                                                    #   certifi's bundle (default: either
                                                    #   SSL_CERT_FILE/DIR, else certifi)

Every failure here is a ProviderError of kind "config" (exit code 2), one line, naming
what to set.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import msgspec

from codecoder.kernel.ports import ProviderError
from codecoder.providers.pricing import price_for, price_table

if TYPE_CHECKING:
    from codecoder.providers.client import WireClient
    from codecoder.providers.http import RetryPolicy, Timeouts
    from codecoder.providers.pool import CA
    from codecoder.providers.wire import WireFormat, WireName

WIRES: tuple[WireName, ...] = ("chat", "responses", "anthropic")
_WIRE_MODULES = {
    "chat": "codecoder.providers.openai_chat",
    "responses": "codecoder.providers.openai_responses",
    "anthropic": "codecoder.providers.anthropic",
}
_OPTION_KEYS = ("max_tokens", "reasoning_effort", "thinking_budget", "extra_body")


class ProviderSettings(msgspec.Struct, frozen=True):
    name: str
    wire: WireName
    base_url: str
    api_key_env: str | None
    """None: the server needs no key (a local one)."""
    base_url_env: str | None = None
    auth_token_env: str | None = None
    """A bearer token used when `api_key_env` is unset (ANTHROPIC_AUTH_TOKEN)."""
    env_headers: Mapping[str, str] = msgspec.field(default_factory=dict)
    """Header name → environment variable; sent when the variable is set."""
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)
    options: Mapping[str, Any] = msgspec.field(default_factory=dict)
    models: tuple[str, ...] = ()
    """Models worth listing (`codecoder models`); any model name is accepted."""
    base_url_from_config: bool = False


BUILTIN: dict[str, ProviderSettings] = {
    "openai": ProviderSettings(
        "openai",
        "responses",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        base_url_env="OPENAI_BASE_URL",
        env_headers={"OpenAI-Organization": "OPENAI_ORG_ID", "OpenAI-Project": "OPENAI_PROJECT_ID"},
    ),
    "anthropic": ProviderSettings(
        "anthropic",
        "anthropic",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        base_url_env="ANTHROPIC_BASE_URL",
        auth_token_env="ANTHROPIC_AUTH_TOKEN",
    ),
    "ollama": ProviderSettings("ollama", "chat", "http://localhost:11434/v1", None),
    "openrouter": ProviderSettings(
        "openrouter", "chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"
    ),
    "deepseek": ProviderSettings(
        "deepseek", "chat", "https://api.deepseek.com", "DEEPSEEK_API_KEY"
    ),
}


def _config_error(message: str) -> ProviderError:
    return ProviderError("config", message)


def parse_spec(spec: str) -> tuple[str, str]:
    """`provider/model` → (provider, model); the model may hold more slashes
    (`openrouter/anthropic/claude-sonnet-4.5`)."""
    provider, _, model = spec.strip().partition("/")
    if not provider or not model:
        raise _config_error(
            f"model {spec!r} is not of the form provider/model (e.g. anthropic/claude-sonnet-4-5)"
        )
    return provider, model


def default_model(config: Mapping[str, Any]) -> str | None:
    model = config.get("model")
    return model if isinstance(model, str) and model else None


def all_providers(config: Mapping[str, Any]) -> dict[str, ProviderSettings]:
    """Built-ins overlaid by `[providers.NAME]` tables, then the custom ones."""
    out = dict(BUILTIN)
    tables = config.get("providers")
    if tables is None:
        return out
    if not isinstance(tables, Mapping):
        raise _config_error("[providers] in config must be a table of tables")
    for name, table in cast(Mapping[str, Any], tables).items():
        if not isinstance(table, Mapping):
            raise _config_error(f"[providers.{name}] in config must be a table")
        out[name] = _from_config(name, cast(Mapping[str, Any], table), out.get(name))
    return out


def _from_config(
    name: str, table: Mapping[str, Any], base: ProviderSettings | None
) -> ProviderSettings:
    wire = table.get("wire", base.wire if base else "chat")
    if wire not in WIRES:
        raise _config_error(f"[providers.{name}] wire must be one of {', '.join(WIRES)}")
    base_url = table.get("base_url", base.base_url if base else None)
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise _config_error(f'[providers.{name}] needs base_url = "http(s)://…"')
    key_env = table.get("api_key_env", base.api_key_env if base else None)
    if key_env is not None and not isinstance(key_env, str):
        raise _config_error(f"[providers.{name}] api_key_env must be a variable name")
    settings = base or ProviderSettings(name, wire, base_url, None)
    return msgspec.structs.replace(
        settings,
        wire=wire,
        base_url=base_url,
        api_key_env=key_env or None,
        headers={**settings.headers, **_strings(name, "headers", table.get("headers", {}))},
        options={**settings.options, **{k: table[k] for k in _OPTION_KEYS if k in table}},
        models=_models(name, table.get("models", settings.models)),
        base_url_from_config="base_url" in table or settings.base_url_from_config,
    )


def _strings(name: str, key: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in cast(Mapping[object, object], value).items()
    ):
        raise _config_error(f"[providers.{name}] {key} must hold strings")
    return dict(cast(Mapping[str, str], value))


def _models(name: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(model, str) for model in cast(list[object], value)
    ):
        raise _config_error(f"[providers.{name}] models must be a list of model names")
    return tuple(cast(list[str], value))


def base_url(settings: ProviderSettings, environ: Mapping[str, str]) -> str:
    if settings.base_url_env and not settings.base_url_from_config:
        from_env = environ.get(settings.base_url_env)
        if from_env:
            return from_env.rstrip("/")
    return settings.base_url.rstrip("/")


def credentials(
    settings: ProviderSettings, environ: Mapping[str, str]
) -> tuple[str | None, dict[str, str]]:
    """(api key, extra headers); raises a config error naming the missing variable."""
    headers = {h: environ[v] for h, v in settings.env_headers.items() if environ.get(v)}
    if settings.api_key_env is None:
        return None, headers
    key = environ.get(settings.api_key_env)
    if key:
        return key, headers
    token = environ.get(settings.auth_token_env) if settings.auth_token_env else None
    if token:
        return None, {**headers, "Authorization": f"Bearer {token}"}
    raise _config_error(
        f"{settings.api_key_env} is not set (needed for the {settings.name} provider)"
    )


def key_status(settings: ProviderSettings, environ: Mapping[str, str]) -> str:
    """ "set", "missing" or "not needed" (for `codecoder models` / `doctor`)."""
    if settings.api_key_env is None:
        return "not needed"
    names = [settings.api_key_env, settings.auth_token_env]
    return "set" if any(name and environ.get(name) for name in names) else "missing"


def http_ca(config: Mapping[str, Any]) -> CA | None:
    """`[http] ca`: where server certificates are checked against (see pool.TrustStore)."""
    table = config.get("http")
    ca = table.get("ca") if isinstance(table, Mapping) else None
    if ca not in (None, "system", "certifi"):
        raise _config_error('[http] ca must be "system" or "certifi"')
    return cast("CA | None", ca)


def wire_format(name: WireName) -> WireFormat:
    module = importlib.import_module(_WIRE_MODULES[name])
    return module.WIRE


def resolve(
    spec: str | None,
    config: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
) -> WireClient:
    """The client for `spec` (else the config's default model). Raises ProviderError
    (kind "config") for a bad spec, an unknown provider or a missing key."""
    from codecoder.providers.client import WireClient
    from codecoder.providers.http import HttpClient
    from codecoder.providers.pool import TrustStore

    env = os.environ if environ is None else environ
    spec = spec or default_model(config)
    if not spec:
        raise _config_error(
            'no model chosen: pass --model provider/model or set model = "…" in config.toml'
        )
    provider, model = parse_spec(spec)
    providers = all_providers(config)
    settings = providers.get(provider)
    if settings is None:
        known = ", ".join(sorted(providers))
        raise _config_error(
            f"unknown provider {provider!r} (known: {known}; add [providers.{provider}] to config)"
        )
    api_key, env_headers = credentials(settings, env)
    return WireClient(
        provider=provider,
        model=model,
        wire=wire_format(settings.wire),
        http=HttpClient(
            base_url(settings, env),
            retry=retry,
            timeouts=timeouts,
            trust=TrustStore(http_ca(config)),
        ),
        api_key=api_key,
        headers={**env_headers, **settings.headers},
        options=settings.options,
        price=price_for(f"{provider}/{model}", price_table(config)),
    )
