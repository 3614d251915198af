"""Model specs, built-in and configured providers, environment variables, prices."""

from __future__ import annotations

import pytest

from codecoder.kernel.events import Usage
from codecoder.kernel.ports import ProviderError
from codecoder.providers import pricing, registry

KEYS = {
    "OPENAI_API_KEY": "sk-openai",
    "ANTHROPIC_API_KEY": "sk-ant",
    "OPENROUTER_API_KEY": "sk-or",
    "DEEPSEEK_API_KEY": "sk-ds",
}


def resolve(spec: str | None, config: dict[str, object] | None = None, **env: str):
    client = registry.resolve(spec, config or {}, environ={**KEYS, **env})
    client.close()
    return client


@pytest.mark.parametrize(
    ("spec", "wire", "url", "model"),
    [
        ("openai/gpt-5", "responses", "https://api.openai.com/v1", "gpt-5"),
        (
            "anthropic/claude-sonnet-4-5",
            "anthropic",
            "https://api.anthropic.com",
            "claude-sonnet-4-5",
        ),
        ("ollama/qwen3-coder", "chat", "http://localhost:11434/v1", "qwen3-coder"),
        (
            "openrouter/anthropic/claude-sonnet-4.5",
            "chat",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4.5",
        ),
        ("deepseek/deepseek-chat", "chat", "https://api.deepseek.com", "deepseek-chat"),
    ],
)
def test_builtin_providers(spec: str, wire: str, url: str, model: str) -> None:
    client = resolve(spec)
    assert (client.wire.name, client.http.base_url, client.model) == (wire, url, model)


def test_keys_reach_the_right_header() -> None:
    assert resolve("openai/gpt-5").headers["Authorization"] == "Bearer sk-openai"
    anthropic = resolve("anthropic/claude-haiku-4-5")
    assert anthropic.headers["x-api-key"] == "sk-ant" and "Authorization" not in anthropic.headers
    assert "Authorization" not in resolve("ollama/llama3").headers


def test_a_missing_key_names_its_variable() -> None:
    with pytest.raises(ProviderError) as caught:
        registry.resolve("anthropic/claude-sonnet-4-5", {}, environ={})
    assert caught.value.kind == "config"
    assert (
        caught.value.message == "ANTHROPIC_API_KEY is not set (needed for the anthropic provider)"
    )


def test_sdk_environment_variables_are_honoured() -> None:
    client = resolve(
        "openai/gpt-5",
        OPENAI_BASE_URL="http://proxy.local:8080/v1/",
        OPENAI_ORG_ID="org-1",
        OPENAI_PROJECT_ID="proj-2",
    )
    assert client.http.base_url == "http://proxy.local:8080/v1"
    assert client.headers["OpenAI-Organization"] == "org-1"
    assert client.headers["OpenAI-Project"] == "proj-2"
    assert resolve("anthropic/x", ANTHROPIC_BASE_URL="http://gw").http.base_url == "http://gw"
    token_only = registry.resolve("anthropic/x", {}, environ={"ANTHROPIC_AUTH_TOKEN": "tok"})
    assert token_only.headers["Authorization"] == "Bearer tok"


def test_custom_providers_and_overrides_from_config() -> None:
    config = {
        "model": "lm/qwen3-coder-30b",
        "providers": {
            "lm": {
                "base_url": "http://127.0.0.1:1234/v1",
                "wire": "chat",
                "models": ["qwen3-coder-30b"],
                "max_tokens": 4096,
                "headers": {"X-Team": "tools"},
            },
            "corp": {
                "base_url": "https://llm.corp/anthropic",
                "wire": "anthropic",
                "api_key_env": "CORP_KEY",
            },
            "openai": {"wire": "chat", "base_url": "http://local:9/v1"},
        },
    }
    default = resolve(None, config)
    assert default.spec == "lm/qwen3-coder-30b" and default.wire.name == "chat"
    assert default.options["max_tokens"] == 4096 and default.headers["X-Team"] == "tools"
    corp = resolve("corp/claude", config, CORP_KEY="k")
    assert (corp.wire.name, corp.headers["x-api-key"]) == ("anthropic", "k")
    openai = resolve("openai/gpt-5", config, OPENAI_BASE_URL="http://ignored")
    assert (openai.wire.name, openai.http.base_url) == ("chat", "http://local:9/v1")


@pytest.mark.parametrize(
    ("spec", "config", "message"),
    [
        (None, {}, "no model chosen"),
        ("gpt-5", {}, "is not of the form provider/model"),
        ("nope/model", {}, "unknown provider 'nope'"),
        (
            "x/m",
            {"providers": {"x": {"wire": "grpc", "base_url": "http://h"}}},
            "wire must be one of",
        ),
        ("x/m", {"providers": {"x": {"wire": "chat"}}}, "needs base_url"),
        ("x/m", {"providers": {"x": {"base_url": "http://h", "models": "m"}}}, "models must be"),
        ("x/m", {"providers": {"x": "http://h"}}, "must be a table"),
        ("ollama/m", {"http": {"ca": "os"}}, '[http] ca must be "system" or "certifi"'),
    ],
)
def test_configuration_errors_are_one_line(
    spec: str | None, config: dict[str, object], message: str
) -> None:
    with pytest.raises(ProviderError) as caught:
        registry.resolve(spec, config, environ=KEYS)
    assert caught.value.kind == "config" and message in caught.value.message


@pytest.mark.parametrize("ca", [None, "system", "certifi"])
def test_http_ca_from_config_reaches_the_client(ca: str | None) -> None:
    config = {"http": {"ca": ca}} if ca else {}
    assert registry.resolve("ollama/qwen", config, environ=KEYS).http.trust.ca == ca


def test_prices_from_the_table_and_from_config() -> None:
    table = pricing.price_table({"prices": {"lm/qwen": {"input": 0.1, "output": 0.2}}})
    assert pricing.price_for("anthropic/claude-sonnet-4-5-20250929", table) == pricing.Price(
        3.0, 15.0, 0.30
    )
    assert pricing.price_for("openai/gpt-5-mini", table) == pricing.Price(0.25, 2.0, 0.025)
    assert pricing.price_for("ollama/anything", table) == pricing.Price(0.0, 0.0, 0.0)
    assert pricing.price_for("lm/qwen", table) == pricing.Price(0.1, 0.2)
    assert pricing.price_for("openai/gpt-9", table) is None
    assert resolve("openai/gpt-9").price is None
    assert resolve("openai/gpt-5").price == pricing.BUILTIN_PRICES["openai/gpt-5"]


def test_cost_counts_cached_input_at_its_own_price() -> None:
    price = pricing.Price(input=3.0, output=15.0, cached=0.3)
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=800_000)
    assert price.cost(usage) == pytest.approx(0.2 * 3.0 + 0.8 * 0.3 + 0.1 * 15.0)
    assert pricing.Price(1.0, 1.0).cost(usage) == pytest.approx(1.1)
