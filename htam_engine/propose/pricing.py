"""What a model's tokens cost: one price table, one cost function.

Prices are USD per 1M tokens (input, output). The table covers common hosted models;
a user adds or corrects entries with `[prices."model-name"]` tables (`input`, `output`)
in the config file. Local servers (vLLM, llama.cpp, Ollama) cost nothing unless the
user says otherwise; an unknown model is priced at zero and flagged as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(slots=True, frozen=True)
class Price:
    input_per_m: float
    output_per_m: float


BUILTIN_PRICES: dict[str, Price] = {
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o1": Price(15.00, 60.00),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "deepseek-chat": Price(0.27, 1.10),
    "deepseek-reasoner": Price(0.55, 2.19),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
}


class PriceTable:
    """Built-in prices overlaid with the user's; looks models up by name, then by prefix."""

    def __init__(self, extra: Mapping[str, Price] | None = None):
        self._prices = dict(BUILTIN_PRICES)
        self._prices.update(extra or {})

    def lookup(self, model: str) -> Price | None:
        """Exact name first; then the longest known prefix (dated snapshots such as
        `gpt-4o-2024-08-06`); a provider prefix (`openai/gpt-4o`) is ignored."""
        for name in (model, model.rsplit("/", 1)[-1]):
            if name in self._prices:
                return self._prices[name]
        base = model.rsplit("/", 1)[-1]
        best = max((k for k in self._prices if base.startswith(k + "-")), key=len, default=None)
        return self._prices[best] if best else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for one call; 0.0 for a model the table does not know."""
        price = self.lookup(model)
        if price is None:
            return 0.0
        return (prompt_tokens * price.input_per_m + completion_tokens * price.output_per_m) / 1_000_000


def parse_prices(table: Mapping[str, object], where: str) -> dict[str, Price]:
    """`[prices."name"]` tables from a config file; ValueError names the bad entry."""
    out: dict[str, Price] = {}
    for name, entry in table.items():
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}: prices.{name} must be a table with input and output")
        try:
            out[name] = Price(float(entry.get("input", 0.0)), float(entry.get("output", 0.0)))
        except (TypeError, ValueError):
            raise ValueError(f"{where}: prices.{name}: input and output must be numbers (USD per 1M tokens)") from None
        if out[name].input_per_m < 0 or out[name].output_per_m < 0:
            raise ValueError(f"{where}: prices.{name}: prices cannot be negative")
    return out
