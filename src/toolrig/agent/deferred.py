"""Deferred tools (``tools.deferred: true``): the model starts with the core tools and tool_search.

A large catalog (MCP servers with hundreds of tools) costs tokens on every turn and crowds the model's
choice. With deferral, only the built-in tools and the lookup tools are sent; a tool that a successful
tool_search or tool_info names is sent from the next turn on. What the model may call is unchanged: the
gate decides every call as before, whatever list the model was shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolrig.registry import AnyTool, builtin_group_names
from toolrig.result import ToolResult

LOOKUP_TOOLS = frozenset({"tool_search", "tool_info", "mcp_search", "mcp_list_tools", "mcp_info"})


class DeferredTools:
    def __init__(self, tools: Sequence[AnyTool], core_groups: Iterable[str]) -> None:
        self.all = list(tools)
        groups = set(core_groups)
        self._names = {name: t for t in tools for name in (t.name, t.display_name) if name}
        self.shown = {t.name for t in tools if t.group in groups or t.name in LOOKUP_TOOLS}

    def visible(self) -> list[AnyTool]:
        return [t for t in self.all if t.name in self.shown]

    def reveal(self, name: str, result: ToolResult | None) -> bool:
        """Show the tools a lookup call found from the next turn on; True when the list grew."""
        if name not in LOOKUP_TOOLS or result is None or result.is_error or not isinstance(result.output, dict):
            return False
        output: dict[str, Any] = result.output
        found = [item.get("name") for item in output.get("tools") or [] if isinstance(item, dict)]
        found.append(output.get("name"))
        before = len(self.shown)
        for item in found:
            tool = self._names.get(item) if isinstance(item, str) else None
            if tool is not None:
                self.shown.add(tool.name)
        return len(self.shown) > before


def deferral(tools: Sequence[AnyTool], enabled: bool) -> DeferredTools | None:
    """The deferral for a run, or None when every tool is sent (the default, or no lookup tool offered)."""
    if not enabled or not any(t.name in LOOKUP_TOOLS for t in tools):
        return None
    return DeferredTools(tools, builtin_group_names())
