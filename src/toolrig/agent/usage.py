"""Token usage and what it cost, per turn and per run.

Prices are US dollars per million tokens. The table holds list prices of common models as published by
their providers; ``llm.price`` in config overrides it (local models, negotiated prices, new models).
A model with no known price costs 0 and cannot be held to a budget (the loop warns once).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolrig.events import UsageEvent


@dataclass(frozen=True, slots=True)
class Price:
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


# Longest matching prefix wins; names are compared without a router prefix ("anthropic/claude-...").
PRICES: dict[str, Price] = {
    "claude-opus-4": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4": Price(1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
    "gpt-4o": Price(2.5, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "gpt-4.1": Price(2.0, 8.0, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "o3": Price(2.0, 8.0, 0.5),
    "o4-mini": Price(1.1, 4.4, 0.275),
    "deepseek-chat": Price(0.27, 1.1, 0.07),
    "deepseek-reasoner": Price(0.55, 2.19, 0.14),
}


def price_for(model: str, override: Price | None = None) -> Price | None:
    if override is not None:
        return override
    name = model.rsplit("/", 1)[-1].lower()
    best = max((p for p in PRICES if name.startswith(p)), key=len, default=None)
    return PRICES[best] if best else None


@dataclass(slots=True)
class Usage:
    """Tokens of one or more model calls. ``input`` excludes cached tokens, which are counted apart."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, other: Usage) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.cost_usd += other.cost_usd
        self.calls += other.calls

    def priced(self, price: Price | None) -> Usage:
        if price is not None:
            self.cost_usd = (
                self.input * price.input
                + self.output * price.output
                + self.cache_read * price.cache_read
                + self.cache_write * price.cache_write
            ) / 1_000_000
        return self

    def event(self) -> UsageEvent:
        return UsageEvent(self.input, self.output, self.cache_read, self.cache_write, cost_usd=self.cost_usd)

    def to_json(self) -> dict[str, float]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cost_usd": round(self.cost_usd, 8),
            "calls": self.calls,
        }

    @classmethod
    def from_json(cls, data: dict[str, float]) -> Usage:
        return cls(
            int(data.get("input", 0)),
            int(data.get("output", 0)),
            int(data.get("cache_read", 0)),
            int(data.get("cache_write", 0)),
            float(data.get("cost_usd", 0.0)),
            int(data.get("calls", 0)),
        )
