"""Which of the allowed tools a run shows its model (``llm.tools``): all, a compact core set, or a list.

The full catalog costs thousands of prompt tokens on every turn; on a model with an 8k or 16k context that
is most of it. The core set covers reading, searching, editing and running in about a tenth of the tokens.
This decides only what the model is shown: what it may call is still the gate's decision.
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
SMALL_CONTEXT = 32_768  # tokens: at or below, "auto" shows the core set


def shown_tools(
    tools: Sequence[AnyTool],
    choice: str | Sequence[str],
    *,
    model: str,
    configured_window: int | None = None,
    agent_lists_tools: bool = False,
) -> list[AnyTool]:
    """The tools to show: ``choice`` applied to ``tools`` (already what policy allows this run).

    An agent whose config lists its own tools keeps them all: that list is the user's choice for it.
    Terminal tools (a task's complete/fail) are always kept: without them a task run cannot end.
    """
    if agent_lists_tools or choice == "all":
        return list(tools)
    if choice == "auto":
        window = context_window(model, configured_window)
        if window is None or window > SMALL_CONTEXT:
            return list(tools)
        patterns: Sequence[str] = CORE_TOOLS
    elif choice == "core":
        patterns = CORE_TOOLS
    else:
        patterns = [choice] if isinstance(choice, str) else choice
    return [
        t
        for t in tools
        if t.terminal or any(fnmatchcase(name, p) for p in patterns for name in (t.name, t.display_name) if name)
    ]
