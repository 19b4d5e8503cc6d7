"""Deferred tools: the model starts with a core set and tool_search; the rest is shown once a lookup names it.

Two ways in: ``llm.tools: search`` (the default for models with a large or unknown context) shows the core
set of ``toolrig.agent.toolset.SEARCH_CORE``; ``tools.deferred: true`` shows every built-in tool and defers
plugin and MCP tools. A tool that a successful tool_search or tool_info names is sent from the next turn on.
What the model may call is unchanged: every offered tool is callable from the first turn, and the gate
decides every call as before, whatever list the model was shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolrig.profiles import Profile, capability_of
from toolrig.registry import AnyTool, builtin_group_names
from toolrig.result import ToolResult

LOOKUP_TOOLS = frozenset({"tool_search", "tool_info", "mcp_search", "mcp_list_tools", "mcp_info"})


class DeferredTools:
    def __init__(self, tools: Sequence[AnyTool], core_groups: Iterable[str], core_names: Iterable[str] = ()) -> None:
        self.all = list(tools)
        groups, names = set(core_groups), set(core_names)
        self._names = {name: t for t in tools for name in (t.name, t.display_name) if name}
        # Terminal tools stay shown: a task run cannot end without complete_task / fail_task. A core name brings
        # its capability's other tools (spawn_agents: Claude's Agent), of which the profile shows one.
        self.shown = {
            t.name
            for t in tools
            if t.group in groups or capability_of(t.name) in names or t.name in LOOKUP_TOOLS or t.terminal
        }

    def visible(self) -> list[AnyTool]:
        return [t for t in self.all if t.name in self.shown]

    def hidden(self, profile: Profile) -> list[str]:
        """The names not shown yet (callable all the same) under ``profile``, each capability once."""
        from toolrig.adapters.faces import faced, shown_capability

        shown = {shown_capability(t) for t in faced(self.visible(), profile)}
        return [t.name for t in faced(self.all, profile) if shown_capability(t) not in shown]

    def reveal(self, name: str, result: ToolResult | None) -> bool:
        """Show the tools a lookup call found from the next turn on; True when the list grew."""
        if name not in LOOKUP_TOOLS or result is None or result.is_error or not isinstance(result.output, dict):
            return False
        output: dict[str, Any] = result.output
        found = [item.get("name") for item in output.get("tools") or [] if isinstance(item, dict)]
        found.append(output.get("name"))
        before = len(self.shown)
        for item in found:
            for tool in self._find(item):
                self.shown.add(tool.name)
        return len(self.shown) > before

    def _find(self, name: object) -> list[AnyTool]:
        """The tools ``name`` stands for: its own, or (under a profile, where lookups answer ``Bash``) its face's."""
        if not isinstance(name, str):
            return []
        tool = self._names.get(name)
        if tool is not None:
            return [tool]
        from toolrig.profiles import tools_named

        return [self._names[t] for t in tools_named(name) if t in self._names]


def deferral(tools: Sequence[AnyTool], enabled: bool, core: Sequence[str] | None = None) -> DeferredTools | None:
    """The deferral for a run, or None when every tool is sent (no deferral asked, or no lookup tool offered).

    ``core``: the names shown from the start (``llm.tools: search``); else ``enabled`` (``tools.deferred``)
    shows every built-in tool.
    """
    if (core is None and not enabled) or not any(t.name in LOOKUP_TOOLS for t in tools):
        return None
    if core is not None:
        return DeferredTools(tools, (), core)
    return DeferredTools(tools, builtin_group_names())


def deferred_note(deferred: DeferredTools | None, profile: Profile) -> str:
    """A system-prompt line naming the tools not shown yet, so the model knows to look them up."""
    names = deferred.hidden(profile) if deferred is not None else []
    if not names:
        return ""
    return (
        "\n\nMore tools are available than are listed; find one with tool_search (or tool_info by name) and it "
        f"is listed from your next turn: {', '.join(names)}."
    )
