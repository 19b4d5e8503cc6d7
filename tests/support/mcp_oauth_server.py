"""An OAuth-protected MCP server on 127.0.0.1, its own authorization server: the official SDK's ``MCPServer`` with
its auth routes (metadata, /token, protected-resource metadata) over an in-memory provider, served by uvicorn.

The provider knows one pre-registered public client and the tokens a test seeds; it records every grant
and every access token presented to the MCP endpoint, so a test sees exactly what the client sent.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from mcp.server.auth.provider import AccessToken, AuthorizationCode, AuthorizationParams, RefreshToken
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

CLIENT_ID = "toolrig-test-client"
SCOPE = "mcp:tools"


@dataclass
class Provider:
    """The authorization server's memory: clients, tokens, and what happened (``grants``, ``presented``)."""

    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    grants: list[tuple[str, str]] = field(default_factory=list)  # (grant type, the token it used)
    presented: list[str] = field(default_factory=list)  # access tokens the MCP endpoint was shown
    refuse_refresh: bool = False

    def seed(self, *, access: str, refresh: str, access_expired: bool) -> None:
        expiry = int(time.time()) + (-3600 if access_expired else 3600)
        self.access[access] = AccessToken(token=access, client_id=CLIENT_ID, scopes=[SCOPE], expires_at=expiry)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=CLIENT_ID, scopes=[SCOPE])

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        raise AssertionError("the test client is registered beforehand")

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        raise AssertionError("a refresh never sends the user to sign in")

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        raise AssertionError("no authorization code is ever issued here")

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        self.grants.append(("refresh_token", refresh_token))
        return None if self.refuse_refresh else self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated: the old one never works again
        access, rotated = f"access-{secrets.token_hex(8)}", f"refresh-{secrets.token_hex(8)}"
        self.seed(access=access, refresh=rotated, access_expired=False)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=3600, refresh_token=rotated, scope=" ".join(scopes)
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        self.presented.append(token)
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None


@dataclass
class Running:
    url: str  # the MCP endpoint
    provider: Provider


@asynccontextmanager
async def oauth_mcp_server() -> AsyncIterator[Running]:
    """The server on a free 127.0.0.1 port for the block's duration."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        async with _serving(sock) as running:
            yield running


@asynccontextmanager
async def _serving(sock: socket.socket) -> AsyncIterator[Running]:
    import uvicorn
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from pydantic import AnyHttpUrl

    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider()
    provider.clients[CLIENT_ID] = OAuthClientInformationFull(
        client_id=CLIENT_ID,
        redirect_uris=[AnyHttpUrl("http://127.0.0.1:9/callback")],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        scope=SCOPE,
    )
    settings = AuthSettings.model_validate(
        {"issuer_url": base, "resource_server_url": f"{base}/mcp", "validate_token_resource": False}
    )
    app = MCPServer("protected", auth_server_provider=provider, auth=settings)

    @app.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield Running(f"{base}/mcp", provider)
        finally:
            server.should_exit = True
