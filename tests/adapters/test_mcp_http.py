"""Our MCP server over streamable HTTP: the official client, and the DNS-rebinding and token guards."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from tests.adapters.mcp_peers import running, toolrig_command
from toolrig.adapters.mcp_http import allowed_hosts, is_loopback

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
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
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
        async with Client(url, mode="auto") as a, Client(url, mode="auto") as b:
            moved = await a.call_tool("run_command", {"command": "cd build && pwd"})
            assert (moved.structured_content or {})["cwd"] == "build"
            for client in (b, a):
                after = await client.call_tool("run_command", {"command": "pwd"})
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
            refused = httpx2.post(url, content=content, headers=MCP_HEADERS, timeout=20)
            assert refused.status_code == 413, refused.text
        assert post(url).status_code == 200  # the server goes on
        async with Client(url) as client:  # a call within the limit is read whole and answered by the tool
            within = await client.call_tool("calculate", {"expression": "1+" * 40_000 + "1"})
            assert within.is_error or within.structured_content == {"result": 40_001}
            assert "over the" not in str(within.content)


def test_the_size_limit_is_checked_only_after_the_bearer_token(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home, "--max-message-bytes", "100000", token="s3cret") as url:
        refused = httpx2.post(url, content=_call("1" * 200_000), headers=MCP_HEADERS, timeout=20)
        assert refused.status_code == 401  # nobody unauthenticated learns the limit, or makes us read a byte more
