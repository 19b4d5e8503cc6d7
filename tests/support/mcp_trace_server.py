"""A stdio MCP server whose one tool answers with the ``_meta`` its request carried (trace propagation tests)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("trace-peer")


@server.tool()
def seen_meta(ctx: Context) -> dict[str, Any]:
    """The request's _meta, as received."""
    meta = ctx.request_context.meta
    return {"traceparent": (meta or {}).get("traceparent")}


if __name__ == "__main__":
    server.run()
