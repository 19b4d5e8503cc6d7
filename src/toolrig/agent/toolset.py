"""Which of the allowed tools a run shows its model (``llm.tools``): all, a core set, core plus search, or a list.

The full catalog costs about 10,000 prompt tokens on every turn (benchmarks/tool_tokens.py); on a model with an
8k or 16k context that is most of it, and on any model it crowds the choice. The core set covers reading,
searching, editing and running in about a quarter of the tokens. ``search`` (the default for large models)
shows a wider core set plus ``tool_search``; every other allowed tool stays callable and is shown from the
turn after a lookup names it (``toolrig.agent.deferred``). This decides only what the model is shown: what
it may call is still the gate's decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from toolrig.agent.context import context_window
from toolrig.registry import AnyTool

CORE_TOOLS = (
    "read_files",
    "list_directory",
    "glob",
    "code_search",
    "str_replace",
    "write_file",
    "run_command",
    "read_output",  # a large result is handed over by reference: without it the model cannot read the rest
)
# ``search``: what a general agent reaches for on most turns, the rest found by tool_search. Chosen with
# benchmarks/tool_tokens.py: about 4,750 cl100k tokens in the widest shape (OpenAI strict), under 6,000 in
# every profile, against about 10,700 for every tool.
SEARCH_CORE = (
    *CORE_TOOLS,
    "edit",  # Claude's Edit under the claude and camelagi profiles (str_replace is its MultiEdit)
    "fetch_url",
    "web_search",
    "write_todos",
    "spawn_agents",
    "load_skill",
    "tool_search",
    "tool_info",
)
SMALL_CONTEXT = 32_768  # tokens: at or below, "auto" shows the core set, above it core plus search

Choice = str | Sequence[str]


def resolved(
    choice: Choice, *, model: str, configured_window: int | None = None, agent_lists_tools: bool = False
) -> Choice:
    """``choice`` with ``auto`` decided for this model: ``core`` on a small known context, else ``search``.

    An agent whose config lists its own tools keeps them all (``all``): that list is the user's choice for it.
    """
    if agent_lists_tools:
        return "all"
    if choice == "auto":
        window = context_window(model, configured_window)
        return "core" if window is not None and window <= SMALL_CONTEXT else "search"
    return choice


def shown_tools(
    tools: Sequence[AnyTool],
    choice: str | Sequence[str],
    *,
    model: str,
    configured_window: int | None = None,
    agent_lists_tools: bool = False,
) -> list[AnyTool]:
    """The tools a run offers: ``choice`` applied to ``tools`` (already what policy allows this run).

    ``search`` offers every tool (the deferral then picks what is shown first). Terminal tools (a task's
    complete/fail) are always kept: without them a task run cannot end.
    """
    choice = resolved(choice, model=model, configured_window=configured_window, agent_lists_tools=agent_lists_tools)
    if choice in ("all", "search"):
        return list(tools)
    patterns: Sequence[str] = CORE_TOOLS if choice == "core" else [choice] if isinstance(choice, str) else choice
    return [
        t
        for t in tools
        if t.terminal or any(fnmatchcase(name, p) for p in patterns for name in (t.name, t.display_name) if name)
    ]
