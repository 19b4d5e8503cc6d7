"""Our MCP server over streamable HTTP: the official client, and the DNS-rebinding and token guards."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.adapters.mcp_peers import running, toolrig_command
from toolrig.adapters.mcp_http import Guard, allowed_hosts, is_loopback

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextmanager
def http_server(workspace: Path, home: Path, *extra: str, token: str | None = None) -> Iterator[str]:
    env = {**os.environ, "TOOLRIG_HOME": str(home)}
    env.pop("TOOLRIG_MCP_TOKEN", None)
    if token is not None:
        env["TOOLRIG_MCP_TOKEN"] = token
    args = [toolrig_command(), "mcp", "serve", "--transport", "http", "--port", "0", "--root", str(workspace), *extra]
    with running(args, env=env) as process:
        assert process.stderr is not None
        line = process.stderr.readline()
        if "listening on" not in line:
            pytest.fail(f"the server did not start: {line}{process.stderr.read()}")
        yield line.rsplit(" ", 1)[1].strip()


def post(url: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.post(url, content=json.dumps(INIT), headers={**MCP_HEADERS, **(headers or {})}, timeout=20)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_lists_and_calls_tools_over_streamable_http(
    mode: str, workspace: Path, toolrig_home: Path
) -> None:
    with http_server(workspace, toolrig_home) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        async with Client(url, mode=mode) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "calculate" in names
            result = await client.call_tool("calculate", {"expression": "6 * 7"})
            assert result.structured_content == {"result": 42}
            broken = await client.call_tool("calculate", {"expression": "6 *"})
            assert broken.is_error is True


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


def test_an_extra_allowed_host_and_origin_are_accepted(workspace: Path, toolrig_home: Path) -> None:
    extra = ("--allow-origin", "https://app.example", "--allow-host", "toolrig.test:8080")
    with http_server(workspace, toolrig_home, *extra) as url:
        assert post(url, {"origin": "https://app.example"}).status_code == 200
        assert post(url, {"host": "toolrig.test:8080"}).status_code == 200
        assert post(url, {"host": "toolrig.test:8081"}).status_code == 421


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


@given(st.ip_addresses())
def test_only_loopback_addresses_count_as_loopback(address: Any) -> None:
    assert is_loopback(str(address)) is address.is_loopback


@pytest.mark.parametrize(("host", "loopback"), [("localhost", True), ("[::1]", True), ("example.com", False)])
def test_names_are_loopback_only_when_they_are_localhost(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_loopback_servers_answer_to_every_loopback_name_on_their_port() -> None:
    assert allowed_hosts("127.0.0.1", 8765) == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert allowed_hosts("10.0.0.5", 80, ["mcp.internal:80"]) == ["10.0.0.5:80", "mcp.internal:80"]


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
