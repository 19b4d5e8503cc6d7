"""The MCP server over streamable HTTP: loopback by default, behind ``http_auth``'s guard (Host, Origin, token).

Trust model: every request passes ``HttpGuard`` (DNS rebinding, foreign origins, the bearer token) before the
SDK's app sees it; bound beyond loopback, the endpoint refuses to start without a token.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from toolrig.adapters.http_auth import allowed_hosts, allowed_origins, guard, host_header
from toolrig.sources import MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from toolrig.adapters.mcp_server import McpToolServer

MCP_PATH = "/mcp"
DEFAULT_RETRY_MS = 1000  # how long a client waits before it reconnects a dropped stream


def bind(host: str, port: int) -> socket.socket:
    """Bind the listening socket ourselves, so ``--port 0`` works and the real port is known before serving."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    return sock


def streamable_app(
    tool_server: McpToolServer,
    host: str,
    port: int,
    *,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    retry_ms: int = DEFAULT_RETRY_MS,
    max_message_bytes: int | None = None,
) -> Any:
    """The SDK's streamable HTTP app at ``/mcp`` (unguarded: the caller puts it behind ``http_auth``'s guard)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from toolrig.adapters.mcp_events import MemoryEventStore

    hosts = allowed_hosts(host, port, extra_hosts)
    # The SDK's own Host/Origin check stays on behind the guard, with the same lists.
    security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=allowed_origins(hosts, extra_origins))
    return tool_server.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        host=host,
        event_store=MemoryEventStore(),
        retry_interval=retry_ms,
        max_request_body_size=max_message_bytes or MAX_MESSAGE_BYTES,  # a longer body: 413, unread
    )


async def serve_http(
    tool_server: McpToolServer,
    sock: socket.socket,
    *,
    token: str | None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    ready: Callable[[str], None] | None = None,
    retry_ms: int = DEFAULT_RETRY_MS,
    poll_after: float | None = None,
    max_message_bytes: int | None = None,
) -> None:
    """Serve streamable HTTP at ``/mcp`` on ``sock`` until the process is told to stop.

    Streams are resumable: each SSE stream opens with a priming event (an id and ``retry: retry_ms``),
    and a client that lost one reconnects with ``Last-Event-ID`` to get the rest, its result included.
    With ``poll_after`` a call's stream is closed after that many seconds (the call goes on), so long
    calls do not hold a connection open through proxies that cut idle ones.
    """
    import uvicorn

    host, port = sock.getsockname()[:2]
    tool_server.sse_poll_after = poll_after
    app = streamable_app(
        tool_server,
        host,
        port,
        extra_hosts=extra_hosts,
        extra_origins=extra_origins,
        retry_ms=retry_ms,
        max_message_bytes=max_message_bytes,
    )
    # The guard refuses a tokenless endpoint beyond loopback (TokenError) before anything is served.
    guarded = guard(app, host=host, port=port, token=token, extra_hosts=extra_hosts, extra_origins=extra_origins)
    config = uvicorn.Config(guarded, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    async with tool_server.running():
        if ready is not None:
            ready(f"http://{host_header(host, port)}{MCP_PATH}")
        await server.serve(sockets=[sock])
