"""Serving the gateway: the app behind its guard on a socket bound beforehand (so ``--port 0`` works)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from toolrig.adapters.http_auth import host_header
from toolrig.gateway.app import build_app
from toolrig.gateway.auth import gateway_guard

if TYPE_CHECKING:
    import uvicorn

    from toolrig.adapters.mcp_server import McpToolServer
    from toolrig.gateway.channels import Channel
    from toolrig.rig import Rig


def make_server(
    rig: Rig,
    sock: socket.socket,
    *,
    token: str | None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    version: str = "0",
    channels: Sequence[Channel] = (),
    users: Mapping[str, str] | None = None,
    shared: bool = False,
    mcp: McpToolServer | None = None,
) -> tuple[uvicorn.Server, str]:
    """The uvicorn server and the page's base URL; raises ``TokenError`` for a tokenless bind beyond loopback.

    With ``mcp`` the same port serves MCP's streamable HTTP at ``/mcp``, behind the same guard (serve it inside
    ``opened(rig, mcp)``).
    """
    import uvicorn

    from toolrig.adapters.mcp_http import streamable_app

    host, port = sock.getsockname()[:2]
    mcp_app = None
    if mcp is not None:
        mcp_app = streamable_app(mcp, host, port, extra_hosts=extra_hosts, extra_origins=extra_origins)
    app = gateway_guard(
        build_app(rig, version=version, channels=channels, shared=shared, mcp_app=mcp_app),
        host=host,
        port=port,
        token=token,
        users=users,
        extra_hosts=extra_hosts,
        extra_origins=extra_origins,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    return uvicorn.Server(config), f"http://{host_header(host, port)}"


def opened(rig: Rig, mcp: McpToolServer | None) -> contextlib.AbstractAsyncContextManager[object]:
    """What stays open while serving: the Rig (its MCP servers), through the MCP tool server when there is one."""
    return mcp.running() if mcp is not None else rig


def login_url(base: str, token: str | None) -> str:
    """The one-time address that logs a browser in (sets the cookie, then drops the token from the URL)."""
    return f"{base}/login?token={token}" if token else f"{base}/"


async def serve(
    rig: Rig,
    sock: socket.socket,
    *,
    token: str | None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    ready: Callable[[str], None] | None = None,
    version: str = "0",
    channels: Sequence[Channel] = (),
    users: Mapping[str, str] | None = None,
    shared: bool = False,
    mcp: McpToolServer | None = None,
) -> None:
    """Serve until stopped; ``channels`` (see ``gateway.channels``) start with the server and stop with it."""
    server, base = make_server(
        rig,
        sock,
        token=token,
        extra_hosts=extra_hosts,
        extra_origins=extra_origins,
        version=version,
        channels=channels,
        users=users,
        shared=shared,
        mcp=mcp,
    )
    async with opened(rig, mcp):  # MCP servers in the config stay up while the gateway serves
        if ready is not None:
            ready(base)
        await server.serve(sockets=[sock])
