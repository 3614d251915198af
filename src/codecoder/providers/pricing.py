"""What a request cost: a per-model price table (built in for a few well-known models,
extended and overridden by `[prices."provider/model"]` in config) and `Usage.cost`.

Prices are US dollars per million tokens. `input` is the price of uncached input, `cached`
of input read from the provider's prompt cache (defaults to `input`). An unknown price
gives `cost = None`: tokens are still reported, a guessed cost never is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec

from codecoder.kernel.events import Usage


class Price(msgspec.Struct, frozen=True):
    input: float
    output: float
    cached: float | None = None

    def cost(self, usage: Usage) -> float:
        """Usage counts all input (cached included) and all output (reasoning included)."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = self.input if self.cached is None else self.cached
        total = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        )
        return total / 1_000_000

    def apply(self, usage: Usage) -> Usage:
        return msgspec.structs.replace(usage, cost=self.cost(usage))


# Public list prices, checked 2025; config overrides any of them.
BUILTIN_PRICES: dict[str, Price] = {
    "openai/gpt-5": Price(1.25, 10.0, 0.125),
    "openai/gpt-5-mini": Price(0.25, 2.0, 0.025),
    "openai/gpt-5-nano": Price(0.05, 0.40, 0.005),
    "openai/gpt-5-codex": Price(1.25, 10.0, 0.125),
    "openai/gpt-4.1": Price(2.0, 8.0, 0.50),
    "openai/gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "openai/gpt-4o": Price(2.50, 10.0, 1.25),
    "openai/gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "openai/o3": Price(2.0, 8.0, 0.50),
    "openai/o4-mini": Price(1.10, 4.40, 0.275),
    "anthropic/claude-opus-4-1": Price(15.0, 75.0, 1.50),
    "anthropic/claude-sonnet-4-5": Price(3.0, 15.0, 0.30),
    "anthropic/claude-sonnet-4-0": Price(3.0, 15.0, 0.30),
    "anthropic/claude-haiku-4-5": Price(1.0, 5.0, 0.10),
    "deepseek/deepseek-chat": Price(0.28, 0.42, 0.028),
    "deepseek/deepseek-reasoner": Price(0.28, 0.42, 0.028),
    "ollama/*": Price(0.0, 0.0, 0.0),
}


def price_table(config: Mapping[str, Any]) -> dict[str, Price]:
    """Built-in prices overlaid by the config's `[prices."provider/model"]` tables."""
    table = dict(BUILTIN_PRICES)
    configured = config.get("prices")
    if isinstance(configured, Mapping):
        for spec, row in cast(Mapping[str, object], configured).items():
            price = _price_from_config(row)
            if price is not None:
                table[spec] = price
    return table


def _price_from_config(row: object) -> Price | None:
    if not isinstance(row, Mapping):
        return None
    fields = cast(Mapping[str, Any], row)
    try:
        cached = fields.get("cached")
        return Price(
            input=float(fields["input"]),
            output=float(fields["output"]),
            cached=None if cached is None else float(cached),
        )
    except (KeyError, TypeError, ValueError):
        return None


def price_for(spec: str, table: Mapping[str, Price]) -> Price | None:
    """The price of `provider/model`: exact, else the model with a date suffix stripped
    (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`), else the provider's `*` row."""
    if spec in table:
        return table[spec]
    for key, price in table.items():
        if spec.startswith(key + "-2"):  # a dated snapshot of a listed model
            return price
    provider = spec.split("/", 1)[0]
    return table.get(provider + "/*")
