"""A third-party MCP server built with the official SDK (``mcp`` MCPServer), for what npm servers cannot do.

``python tests/support/mcp_peer_server.py STATE_DIR``: ``describe``'s description is read from
STATE_DIR/description.txt at start (so a test can change a definition between runs), ``crash`` ends the
process mid-call, and every start is counted in STATE_DIR/starts.txt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer

state = Path(sys.argv[1])
with (state / "starts.txt").open("a", encoding="utf-8") as starts:
    starts.write(f"{os.getpid()}\n")
description = (state / "description.txt").read_text(encoding="utf-8").strip()
app = MCPServer("peer")


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool(description=description)
def describe() -> str:
    return description


@app.tool()
def whoami(ctx: Context) -> str:
    """The name and version the client announced at initialize."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return f"{info.name} {info.version}" if info is not None else "unknown"


@app.tool()
def crash() -> str:
    """End the server process in the middle of the call."""
    os._exit(3)


@app.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "awake"


if __name__ == "__main__":
    app.run()
