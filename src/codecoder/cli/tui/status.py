"""The footer: model, approval mode, context used, tokens and cost of the session."""

from __future__ import annotations

import msgspec

from codecoder.cli.tui.text import width_of
from codecoder.kernel.events import Usage


def tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 100_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


class Stats(msgspec.Struct):
    """Usage of the session: what the store had when it was opened, plus this run's."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    unpriced: bool = False
    """Some request had no known price: the cost is a lower bound."""
    context: int = 0
    """Tokens the last request sent (its input): how full the window is."""
    window: int = 0

    def add(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_tokens += usage.cached_tokens
        if usage.input_tokens:
            self.context = usage.input_tokens + usage.output_tokens
        if usage.cost is None:
            self.unpriced = self.unpriced or bool(usage.input_tokens or usage.output_tokens)
        else:
            self.cost = (self.cost or 0.0) + usage.cost

    def cost_text(self) -> str:
        if self.cost is None:
            return "cost unknown" if self.unpriced else "$0.00"
        return f"${self.cost:.2f}" + ("+" if self.unpriced else "")

    def context_text(self) -> str:
        if not self.window:
            return ""
        percent = min(100, round(100 * self.context / self.window))
        return f"context {percent}% of {tokens(self.window)}"

    def report(self) -> list[str]:
        """/cost: the session's usage in full."""
        lines = [
            f"input tokens   {self.input_tokens:,} ({self.cached_tokens:,} from the cache)",
            f"output tokens  {self.output_tokens:,}",
        ]
        if self.cost is None:
            lines.append("cost           unknown (no price for this model; see docs/config.md)")
        else:
            extra = " (some requests had no known price)" if self.unpriced else ""
            lines.append(f"cost           ${self.cost:.4f}{extra}")
        if self.window:
            lines.append(
                f"context        {self.context:,} of {self.window:,} tokens (last request)"
            )
        return lines


def footer(parts: list[str], width: int) -> str:
    """`parts` joined with ` · `, dropping from the end what does not fit."""
    shown = [p for p in parts if p]
    while shown and width_of(" · ".join(shown)) > width - 1 and len(shown) > 1:
        shown.pop()
    text = " · ".join(shown)
    return text if width_of(text) < width else text[: max(width - 2, 0)] + "…"
