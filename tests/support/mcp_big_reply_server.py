"""An MCP server over streamable HTTP (the official SDK's) whose ``big`` tool answers with as many bytes as asked.

``python tests/support/mcp_big_reply_server.py json|sse [--gzip-over N]`` prints its URL on stderr's first line.
``--gzip-over N`` stands for a hostile or broken server: a reply longer than N bytes is sent gzip-compressed
whatever the request's Accept-Encoding said.
"""

from __future__ import annotations

import gzip
import socket
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

app = MCPServer("big")


@app.tool()
def big(size: int) -> str:
    """Answer with ``size`` characters."""
    return "x" * size


class GzipAlways:
    def __init__(self, inner: Any, over: int) -> None:
        self.inner = inner
        self.over = over

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        held: dict[str, Any] = {}
        body = bytearray()

        async def hold(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                held["start"] = message
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            start, data = held["start"], bytes(body)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            if len(data) > self.over:
                data = gzip.compress(data)
                headers.append((b"content-encoding", b"gzip"))
            headers.append((b"content-length", str(len(data)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": data})

        await self.inner(scope, receive, hold)


def main() -> None:
    mode = sys.argv[1]
    asgi: Any = app.streamable_http_app(json_response=mode == "json")
    if "--gzip-over" in sys.argv:
        asgi = GzipAlways(asgi, int(sys.argv[sys.argv.index("--gzip-over") + 1]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
