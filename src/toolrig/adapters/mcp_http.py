"""The MCP server over streamable HTTP: loopback by default, Host and Origin checked, a bearer token elsewhere.

Trust model: a web page the user visits can send requests to a loopback port, and a DNS-rebinding name can
make them look same-origin, so every request must name an allowed Host (and Origin, when a browser sends
one). Bound to anything but loopback, the endpoint is reachable by other machines: it refuses to start
without a bearer token, and then every request must carry it.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from toolrig.sources import MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolrig.adapters.mcp_server import McpToolServer

MCP_PATH = "/mcp"
DEFAULT_RETRY_MS = 1000  # how long a client waits before it reconnects a dropped stream


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the endpoint on this machine (``localhost`` counts; names otherwise not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_header(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """Host header values a request may carry: the loopback names on loopback, else the bound address."""
    names = ["127.0.0.1", "localhost", "::1"] if is_loopback(host) else [host]
    return [*(host_header(name, port) for name in names), *extra]


class Guard:
    """ASGI middleware in front of the MCP app: Host, then Origin, then the bearer token."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str], token: str | None = None) -> None:
        self.app = app
        self.hosts = {h.lower() for h in hosts}
        self.origins = {o.lower() for o in origins}
        self._expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value for key, value in scope["headers"]}
        host = headers.get("host", b"").decode("latin-1").lower()
        origin = headers.get("origin")
        if host not in self.hosts:
            await _refuse(send, 421, "The Host header names no address this server answers to.")
        elif origin is not None and origin.decode("latin-1").lower() not in self.origins:
            await _refuse(send, 403, "Requests from this Origin are not allowed.")
        elif self._expected is not None and not hmac.compare_digest(headers.get("authorization", b""), self._expected):
            await _refuse(send, 401, "A valid bearer token is required.", [(b"www-authenticate", b"Bearer")])
        else:
            await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


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
    from mcp.server.transport_security import TransportSecuritySettings

    from toolrig.adapters.mcp_events import MemoryEventStore

    host, port = sock.getsockname()[:2]
    if not is_loopback(host) and not token:
        raise ValueError("an MCP endpoint bound beyond loopback needs a bearer token")
    hosts = allowed_hosts(host, port, extra_hosts)
    origins = [*(f"http://{h}" for h in hosts), *(f"https://{h}" for h in hosts), *extra_origins]
    security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)
    tool_server.sse_poll_after = poll_after
    app: Any = tool_server.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        host=host,
        event_store=MemoryEventStore(),
        retry_interval=retry_ms,
        max_request_body_size=max_message_bytes or MAX_MESSAGE_BYTES,  # a longer body: 413, unread
    )
    guarded = Guard(app, hosts=hosts, origins=origins, token=token)
    config = uvicorn.Config(guarded, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    async with tool_server.running():
        if ready is not None:
            ready(f"http://{host_header(host, port)}{MCP_PATH}")
        await server.serve(sockets=[sock])
