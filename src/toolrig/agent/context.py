"""How much of a model's context the tool list takes, so a small local model is not silently swamped.

The full catalog costs thousands of prompt tokens; on a model with an 8k context that leaves little for the
conversation. Windows of common models are listed here; ``llm.context_window`` gives any other model's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolrig.registry import AnyTool

# Longest matching prefix wins; names are compared without a router prefix ("anthropic/claude-...").
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-": 200_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "deepseek-": 128_000,
}

CHARS_PER_TOKEN = 4  # a deliberately rough estimate: JSON schemas tokenise at about 3.5-4.5 characters


def context_window(model: str, configured: int | None = None) -> int | None:
    if configured is not None:
        return configured
    name = model.rsplit("/", 1)[-1].lower()
    best = max((p for p in CONTEXT_WINDOWS if name.startswith(p)), key=len, default=None)
    return CONTEXT_WINDOWS[best] if best else None


def tool_list_tokens(tools: Sequence[AnyTool]) -> int:
    """About how many prompt tokens the tool definitions cost in every request."""
    chars = sum(
        len(json.dumps({"name": t.name, "description": t.description, "input_schema": t.input_schema()})) for t in tools
    )
    return chars // CHARS_PER_TOKEN


def tool_list_warning(model: str, tools: Sequence[AnyTool], configured: int | None = None) -> str | None:
    """A warning when the tools take more than half the model's known context, else None."""
    window = context_window(model, configured)
    if window is None or not tools:
        return None
    cost = tool_list_tokens(tools)
    if cost * 2 <= window:
        return None
    return (
        f"the {len(tools)} tools offered take about {cost:,} tokens, more than half of {model}'s "
        f"{window:,}-token context: offer fewer (tools.allow, or an agent's tools) or a model with a larger context"
    )
