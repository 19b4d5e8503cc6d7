"""``ToolContext.mcp`` for one call: the workspace's MCP tools, called as the calling agent.

Trust model: the tool asking is trusted code, the arguments it passes may carry whatever a hostile model put
into them, and the servers are as trusted as the config made them. Nothing here decides anything: each call
is a new call of the executor under the caller's scope (its agent, session, offered tools and approval
channel), so policy, approvals, rate limits and the audit judge it as if the agent had made it. Only tools
that came from an MCP server (``server`` and ``remote_name`` set) can be reached this way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from toolrig.errors import ErrorType, ToolError
from toolrig.registry import AnyTool
from toolrig.result import ToolResult

Invoke = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]


def _server_of(tool: AnyTool) -> str | None:
    server = getattr(tool, "server", None)
    name = getattr(server, "name", None)
    return name if isinstance(name, str) and isinstance(getattr(tool, "remote_name", None), str) else None


class CallMcp:
    """One call's handle: ``invoke`` is the executor's, bound to the calling call's scope."""

    def __init__(self, invoke: Invoke, listed: Callable[[], list[AnyTool]], servers: Callable[[], list[str]]) -> None:
        self._invoke = invoke
        self._listed = listed  # the tools this caller is offered (MCP servers start when listed)
        self._servers = servers

    def servers(self) -> list[str]:
        return self._servers()

    def tools(self, server: str | None = None) -> list[dict[str, Any]]:
        found = []
        for tool in self._listed():
            owner = _server_of(tool)
            if owner is not None and server in (None, owner):
                remote = str(getattr(tool, "remote_name", ""))
                found.append({"name": tool.name, "server": owner, "tool": remote, "description": tool.description})
        return found

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        for listed in self.tools(server):
            if listed["tool"] == tool:
                return await self._invoke(listed["name"], dict(arguments or {}))
        known = ", ".join(t["tool"] for t in self.tools(server))[:2000] or "none"
        return ToolResult.from_error(
            ToolError(
                ErrorType.NOT_FOUND,
                f"No MCP tool '{tool}' of server '{server}' is offered here.",
                f"Call one of the tools that server offers here: {known}.",
            )
        )
