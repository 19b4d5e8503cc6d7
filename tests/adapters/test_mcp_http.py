"""Our MCP server over streamable HTTP: the official client, and the DNS-rebinding and token guards."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support.mcp_peers import running, toolrig_command
from toolrig.adapters.http_auth import allowed_hosts, is_loopback

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
TOKEN = "test-token-0123456789abcdef"  # what a script puts in TOOLRIG_MCP_TOKEN
AUTH = {"authorization": f"Bearer {TOKEN}"}


@contextmanager
def serving(workspace: Path, home: Path, *extra: str, token: str | None = TOKEN) -> Iterator[tuple[str, Any]]:
    """`toolrig mcp serve --transport http` on a free loopback port: its URL and process (stderr after line one).

    ``token`` goes to TOOLRIG_MCP_TOKEN, as a script gives it; None leaves the server to keep its own.
    """
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
        yield line.rsplit(" ", 1)[1].strip(), process


@contextmanager
def http_server(workspace: Path, home: Path, *extra: str, token: str | None = TOKEN) -> Iterator[str]:
    """The server's URL; clients authenticate with ``AUTH`` (``post`` and ``client`` do)."""
    with serving(workspace, home, *extra, token=token) as (url, _):
        yield url


def post(url: str, headers: dict[str, str] | None = None, *, auth: dict[str, str] = AUTH) -> httpx2.Response:
    """An ``initialize`` POST with the test token, unless ``headers`` or ``auth`` say otherwise."""
    sent = {**MCP_HEADERS, **auth, **(headers or {})}
    return httpx2.post(url, content=json.dumps(INIT), headers=sent, timeout=20)


@asynccontextmanager
async def client(url: str, *, mode: Any = "auto", headers: dict[str, str] = AUTH) -> AsyncIterator[Client]:
    """The official SDK client, sending the bearer token on every request."""
    http = create_mcp_http_client(headers=headers)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as connected:
        yield connected


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_lists_and_calls_tools_over_streamable_http(
    mode: str, workspace: Path, toolrig_home: Path
) -> None:
    with http_server(workspace, toolrig_home) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        async with client(url, mode=mode) as connected:
            names = [tool.name for tool in (await connected.list_tools()).tools]
            assert "calculate" in names
            result = await connected.call_tool("calculate", {"expression": "6 * 7"})
            assert result.structured_content == {"result": 42}
            broken = await connected.call_tool("calculate", {"expression": "6 *"})
            assert broken.is_error is True


def test_an_extra_allowed_host_and_origin_are_accepted(workspace: Path, toolrig_home: Path) -> None:
    extra = ("--allow-origin", "https://app.example", "--allow-host", "toolrig.test:8080")
    with http_server(workspace, toolrig_home, *extra) as url:
        assert post(url, {"origin": "https://app.example"}).status_code == 200
        assert post(url, {"host": "toolrig.test:8080"}).status_code == 200
        assert post(url, {"host": "toolrig.test:8081"}).status_code == 421


@given(st.ip_addresses())
def test_only_loopback_addresses_count_as_loopback(address: Any) -> None:
    assert is_loopback(str(address)) is address.is_loopback


@pytest.mark.parametrize(("host", "loopback"), [("localhost", True), ("[::1]", True), ("example.com", False)])
def test_names_are_loopback_only_when_they_are_localhost(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_loopback_servers_answer_to_every_loopback_name_on_their_port() -> None:
    assert allowed_hosts("127.0.0.1", 8765) == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert allowed_hosts("10.0.0.5", 80, ["mcp.internal:80"]) == ["10.0.0.5:80", "mcp.internal:80"]


async def test_each_http_client_is_its_own_session_for_per_session_tool_state(
    workspace: Path, toolrig_home: Path
) -> None:
    """Two MCP sessions on one server: one's `cd`, todo list and audit rows are not the other's (F7)."""
    from toolrig.policy.audit import AuditLog

    (workspace / "build").mkdir()
    with http_server(workspace, toolrig_home) as url:
        async with client(url, mode="legacy") as a, client(url, mode="legacy") as b:
            moved = await a.call_tool("run_command", {"command": "cd build && pwd"})
            assert moved.is_error is not True and (moved.structured_content or {})["cwd"] == "build"
            elsewhere = await b.call_tool("run_command", {"command": "pwd"})
            assert (elsewhere.structured_content or {})["cwd"] == "."
            assert (elsewhere.structured_content or {})["stdout"].strip() == str(workspace.resolve())
            stayed = await a.call_tool("run_command", {"command": "pwd"})
            assert (stayed.structured_content or {})["cwd"] == "build"  # A's own state is kept across its calls
            todos = [{"task": "only A's", "status": "pending"}]
            assert (await a.call_tool("write_todos", {"todos": todos})).is_error is not True
            assert (await b.call_tool("write_todos", {"todos": []})).is_error is not True
    rows = AuditLog(workspace / ".toolrig").query(tool="run_command")
    sessions = [row.session for row in rows]
    assert len(rows) == 3 and sessions[0] == sessions[2] != sessions[1]
    assert all(s and s.startswith("mcp-") for s in sessions)
    from toolrig.stores import Stores

    todo_rows = AuditLog(workspace / ".toolrig").query(tool="write_todos")
    assert [r.session for r in todo_rows] == [sessions[0], sessions[1]]
    stores = Stores(workspace / ".toolrig")
    assert stores.notes.get(sessions[0], "todos") == todos and not stores.notes.get(sessions[1], "todos")
    stores.close()


async def test_sessionless_2026_requests_leave_nothing_behind_for_the_next_request(
    workspace: Path, toolrig_home: Path
) -> None:
    """A 2026-07-28 request carries no session: each is its own, so one client's `cd` reaches nobody."""
    from toolrig.policy.audit import AuditLog

    (workspace / "build").mkdir()
    with http_server(workspace, toolrig_home) as url:
        async with client(url) as a, client(url) as b:
            moved = await a.call_tool("run_command", {"command": "cd build && pwd"})
            assert (moved.structured_content or {})["cwd"] == "build"
            for each in (b, a):
                after = await each.call_tool("run_command", {"command": "pwd"})
                assert (after.structured_content or {})["cwd"] == "."
    sessions = [row.session for row in AuditLog(workspace / ".toolrig").query(tool="run_command")]
    assert len(set(sessions)) == 3


def _call(expression: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "calculate"}}
    message["params"] = {"name": "calculate", "arguments": {"expression": expression}}
    return json.dumps(message).encode()


async def test_a_body_over_the_limit_is_refused_with_413_declared_or_streamed_and_the_server_goes_on(
    workspace: Path, toolrig_home: Path
) -> None:
    big = _call("1+" * 60_000 + "1")  # 120 kB

    def chunks() -> Iterator[bytes]:  # no Content-Length: the size shows only as the body arrives
        for start in range(0, len(big), 16_384):
            yield big[start : start + 16_384]

    with http_server(workspace, toolrig_home, "--max-message-bytes", "100000") as url:
        for content in (big, chunks()):
            refused = httpx2.post(url, content=content, headers={**MCP_HEADERS, **AUTH}, timeout=20)
            assert refused.status_code == 413, refused.text
        assert post(url).status_code == 200  # the server goes on
        async with client(url) as connected:  # a call within the limit is read whole and answered by the tool
            within = await connected.call_tool("calculate", {"expression": "1+" * 40_000 + "1"})
            assert within.is_error or within.structured_content == {"result": 40_001}
            assert "over the" not in str(within.content)


def test_the_size_limit_is_checked_only_after_the_bearer_token(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home, "--max-message-bytes", "100000") as url:
        refused = httpx2.post(url, content=_call("1" * 200_000), headers=MCP_HEADERS, timeout=20)
        assert refused.status_code == 401  # nobody unauthenticated learns the limit, or makes us read a byte more
