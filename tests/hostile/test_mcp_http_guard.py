"""Hostile HTTP clients of `toolrig mcp serve --transport http`: DNS rebinding, foreign origins, no token."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.adapters.mcp_peers import toolrig_command
from tests.adapters.test_mcp_http import http_server, post
from toolrig.adapters.mcp_http import Guard

pytestmark = pytest.mark.anyio


def test_a_request_naming_another_host_is_refused_dns_rebinding(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home) as url:
        port = url.split(":")[2].split("/")[0]
        # The request really goes to 127.0.0.1; only the Host header claims another name, as after a rebinding.
        refused = post(url, {"host": f"attacker.example:{port}"})
        assert refused.status_code == 421
        assert post(url, {"host": f"localhost:{port}"}).status_code == 200
        assert post(url).status_code == 200


def test_a_request_from_a_foreign_origin_is_refused(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home) as url:
        port = url.split(":")[2].split("/")[0]
        assert post(url, {"origin": "https://attacker.example"}).status_code == 403
        assert post(url, {"origin": f"http://localhost:{port}"}).status_code == 200


async def test_with_a_token_every_request_must_carry_it(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home, token="s3cret-token") as url:
        assert post(url).status_code == 401
        assert post(url, {"authorization": "Bearer wrong"}).status_code == 401
        assert post(url, {"authorization": "Bearer s3cret-token"}).status_code == 200
        http = create_mcp_http_client(headers={"Authorization": "Bearer s3cret-token"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("calculate", {"expression": "1 + 1"})
            assert result.structured_content == {"result": 2}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])  # noqa: S104 - refused before binding
def test_serving_beyond_loopback_without_a_token_refuses_to_start(host: str, workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOOLRIG_MCP_TOKEN"}
    args = [toolrig_command(), "mcp", "serve", "--transport", "http", "--host", host, "--root", str(workspace)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "without a bearer token" in done.stderr and "TOOLRIG_MCP_TOKEN" in done.stderr


async def test_the_guard_checks_host_then_origin_then_token() -> None:
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard = Guard(app, hosts=["127.0.0.1:1"], origins=["http://127.0.0.1:1"], token="t")

    async def status(headers: dict[str, str]) -> int:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        scope = {"type": "http", "path": "/mcp", "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
        await guard(scope, receive, send)
        return int(sent[0]["status"])

    assert await status({}) == 421
    assert await status({"host": "127.0.0.1:1", "origin": "null"}) == 403
    assert await status({"host": "127.0.0.1:1"}) == 401
    assert await status({"host": "127.0.0.1:1", "authorization": "Bearer t"}) == 204
    assert await status({"host": "127.0.0.1:1", "origin": "http://127.0.0.1:1", "authorization": "Bearer t"}) == 204
    assert reached == ["/mcp", "/mcp"]
