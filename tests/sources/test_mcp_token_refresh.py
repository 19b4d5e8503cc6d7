"""Token refresh end to end: a run holding an expired access token refreshes it against a real authorization
server on loopback (the official SDK's, tests/support/mcp_oauth_server.py), stores the new one, and never shows
the expired one to the MCP server; a refused refresh names the sign-in command."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_oauth_server import CLIENT_ID, oauth_mcp_server
from toolrig.config import McpServerConfig
from toolrig.rig import Rig
from toolrig.sources.mcp_tokens import McpTokenStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.servers]


def server_config(url: str) -> dict[str, Any]:
    return {"url": url, "auth": {"client_id": CLIENT_ID, "store": "file"}}


def seed_store(url: str, home: Path, *, access: str, refresh: str) -> McpTokenStore:
    """What an earlier `toolrig mcp login` left: tokens whose access token expired an hour ago."""
    store = McpTokenStore("remote", McpServerConfig.model_validate(server_config(url)), home=home)
    tokens = {"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "scope": "mcp:tools"}
    store._update("tokens", {**tokens, "expires_at": time.time() - 3600})  # the store's own record of expiry
    return store


async def test_an_expired_access_token_is_refreshed_and_the_new_one_stored(workspace: Path, toolrig_home: Path) -> None:
    async with oauth_mcp_server() as server:
        server.provider.seed(access="stale-access", refresh="refresh-1", access_expired=True)
        store = seed_store(server.url, toolrig_home, access="stale-access", refresh="refresh-1")
        config = {"mcp_servers": {"remote": server_config(server.url)}}
        async with Rig(workspace, config=config) as rig:
            result = await rig.call("remote/echo", {"text": "hello"})
        assert result.is_error is False, result.message
        assert server.provider.grants == [("refresh_token", "refresh-1")]
        assert "stale-access" not in server.provider.presented  # refreshed before the request, not after a 401
        saved = store.load()["tokens"]
        assert saved["access_token"] in server.provider.presented
        assert saved["access_token"] != "stale-access" and saved["refresh_token"] not in ("refresh-1", None)
        assert saved["expires_at"] > time.time() + 3000  # kept absolute, for the next run

        async with Rig(workspace, config=config) as rig:  # the next run uses the stored token as it is
            again = await rig.call("remote/echo", {"text": "again"})
        assert again.is_error is False
        assert len(server.provider.grants) == 1


async def test_a_refused_refresh_asks_for_a_sign_in_by_name(workspace: Path, toolrig_home: Path) -> None:
    async with oauth_mcp_server() as server:
        server.provider.refuse_refresh = True
        seed_store(server.url, toolrig_home, access="stale-access", refresh="revoked")
        config = {"mcp_servers": {"remote": server_config(server.url)}}
        async with Rig(workspace, config=config) as rig:
            assert rig.mcp_servers is not None
            why = rig.mcp_servers.servers["remote"].start_error
    assert why is not None and "toolrig mcp login remote" in why
    assert server.provider.grants == [("refresh_token", "revoked")]
    assert "stale-access" not in server.provider.presented
