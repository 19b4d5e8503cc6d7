"""``toolrig mcp login NAME``: sign in to a remote MCP server and list its tools to prove the grant works.

Apart from ``mcp_auth`` (the sign-in flows a connection uses) because it opens a connection itself: the
transport imports ``mcp_auth``, and this module imports both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from toolrig.config import McpServerConfig
from toolrig.sources.mcp_auth import LOGIN_TIMEOUT, Interactive, loopback_callback
from toolrig.sources.mcp_tokens import AuthConfigError, McpTokenStore
from toolrig.sources.mcp_transport import connect


async def login(
    name: str,
    config: McpServerConfig,
    *,
    open_url: Callable[[str], Awaitable[None]],
    log_path: Path,
    store: McpTokenStore | None = None,
    wait_seconds: float = LOGIN_TIMEOUT,
) -> list[dict[str, Any]]:
    """Sign in to the server (browser flow, or the configured credentials) and list its tools to prove it.

    Stored tokens are dropped first: login is how the user asks for a fresh grant. A dynamic registration
    made for another redirect port is dropped too, so the authorization server sees a redirect it knows.
    """
    auth = config.auth
    if auth is None:
        raise AuthConfigError(f"the MCP server '{name}' has no 'auth:' in its config: there is nothing to sign in to")
    store = store or McpTokenStore(name, config)
    data = await anyio.to_thread.run_sync(store.load)
    client = data.get("client") or {}
    registered = [str(uri) for uri in client.get("redirect_uris") or []]
    port = auth.callback_port or _port_of(registered[0] if registered else "")
    async with contextlib.AsyncExitStack() as stack:
        try:
            callback = await stack.enter_async_context(loopback_callback(port))
        except OSError:
            if auth.callback_port:
                raise
            callback = await stack.enter_async_context(loopback_callback(0))  # the old port is taken: re-register
        if client and callback.redirect_uri not in registered:
            data.pop("client", None)
        data.pop("tokens", None)
        await anyio.to_thread.run_sync(_save, store, data)
        interactive = Interactive(open_url, callback, wait_seconds)
        async with connect(name, config, log_path, interactive=interactive, store=store) as conn:
            definitions = conn.definitions
        signed_in = await anyio.to_thread.run_sync(store.load)
        if signed_in.pop("wanted_scope", None) is not None:
            await anyio.to_thread.run_sync(_save, store, signed_in)
        return definitions
    raise AssertionError("unreachable")  # pragma: no cover  # mypy: the stack may swallow exceptions


def _save(store: McpTokenStore, data: dict[str, Any]) -> None:
    if data:
        store._call("save", data)
    else:
        store.clear()


def _port_of(uri: str) -> int:
    parts = urlsplit(uri)
    if parts.hostname == "127.0.0.1" and parts.port:
        return parts.port
    return 0
