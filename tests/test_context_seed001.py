"""Seed 001's ToolContext: a tool reaches the resolved config and the MCP servers (Botholomew's mcpxClient).

The MCP handle calls as the calling agent: policy, approvals and the audit see each call; a tool denied to
the agent stays out of reach through the handle too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from tests.support.mcp_peers import ROOT
from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


class RelayInput(ToolInput):
    text: str = Field(description="What to echo.")


class RelayOutput(ToolOutput):
    servers: list[str]
    tools: list[str]
    echoed: dict[str, Any]
    model: str | None


class Relay(Tool[RelayInput, RelayOutput]):
    """A plugin tool written as seed 001's are: ``ctx.config`` (here ``global_config``) and the MCP client."""

    name = "relay"
    group = "plugin"
    description = "Echo through the workspace's MCP server."

    async def execute(self, input: RelayInput, ctx: ToolContext) -> RelayOutput:
        assert ctx.mcp is not None and ctx.global_config is not None
        result = await ctx.mcp.call("peer", "echo", {"text": input.text})
        return RelayOutput(
            servers=ctx.mcp.servers(),
            tools=sorted(t["tool"] for t in ctx.mcp.tools("peer")),
            echoed=result.model_dump(include={"is_error", "output", "error_type"}),
            model=ctx.global_config.llm.model,  # type: ignore[attr-defined]
        )


@pytest.fixture
def peer_config(tmp_path: Path) -> dict[str, Any]:
    state = tmp_path / "peer"
    state.mkdir()
    (state / "description.txt").write_text("Describe the peer.", encoding="utf-8")
    command = [sys.executable, str(ROOT / "tests" / "support" / "mcp_peer_server.py"), str(state)]
    return {
        "llm": {"model": "claude-sonnet-4-5"},
        "approvals": {"mode": "off"},
        "mcp_servers": {"peer": {"command": command[0], "args": command[1:]}},
    }


async def test_a_tool_calls_an_mcp_server_and_reads_the_resolved_config(
    workspace: Path, peer_config: dict[str, Any]
) -> None:
    async with Rig(workspace, config=peer_config, tools=[Relay()]) as rig:
        out = (await rig.call("relay", {"text": "hello"}, agent_id="researcher")).raise_for_error()
        rows = [(row.tool, row.agent) for row in rig.governance.audit.query(limit=10)]
    assert ("peer/echo", "researcher") in rows and (
        "relay",
        "researcher",
    ) in rows  # the nested call, audited (as a person reads it)
    assert out["servers"] == ["peer"] and {"echo", "describe"} <= set(out["tools"])
    assert out["echoed"]["is_error"] is False and out["echoed"]["output"]["text"] == "hello"
    assert out["model"] == "claude-sonnet-4-5"


async def test_the_handle_reaches_nothing_the_agent_is_denied(workspace: Path, peer_config: dict[str, Any]) -> None:
    peer_config["tools"] = {"deny": ["peer__echo"]}
    async with Rig(workspace, config=peer_config, tools=[Relay()]) as rig:
        out = (await rig.call("relay", {"text": "hello"})).raise_for_error()
    assert "echo" not in out["tools"]
    assert out["echoed"]["is_error"] is True and out["echoed"]["error_type"] == "not_found"


async def test_without_mcp_servers_there_is_no_handle(workspace: Path) -> None:
    seen: list[object] = []

    class Peek(Relay):
        name = "peek"

        async def execute(self, input: RelayInput, ctx: ToolContext) -> RelayOutput:
            seen.append(ctx.mcp)
            return RelayOutput(servers=[], tools=[], echoed={}, model=None)

    async with Rig(workspace, config={"approvals": {"mode": "off"}}, tools=[Peek()]) as rig:
        (await rig.call("peek", {"text": "x"})).raise_for_error()
    assert seen == [None]
