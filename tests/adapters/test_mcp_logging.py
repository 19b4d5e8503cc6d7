"""A tool's log lines reach the MCP clients that ask for them, at the level they set, and no others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import LoggingMessageNotificationParams

from tests.support.conformance_tools import NoInput, Text
from toolrig import Tool, ToolContext
from toolrig.adapters.mcp_logging import LEVELS, at_or_above
from toolrig.adapters.mcp_server import McpToolServer
from toolrig.registry import Registry
from toolrig.rig import Rig

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]


class EveryLevel(Tool[NoInput, Text]):
    name = "log_every_level"
    group = "sample"
    description = "Logs one line at each level, some from a worker thread."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        for level in LEVELS[:4]:
            ctx.log(level, f"a {level} line")
        await anyio.to_thread.run_sync(ctx.log, "error", "an error line from a thread")
        return Text(text="done")


async def calls_logging(workspace: Path, *, set_level: str | None = None, **client: Any) -> list[tuple[str, Any]]:
    """Run the tool once through the official client; the (level, text) of each log line the client got."""
    got: list[tuple[str, Any]] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        assert params.logger == "log_every_level"
        got.append((params.level, params.data))

    with Rig(workspace, registry=Registry([EveryLevel()])) as rig:
        server = McpToolServer(rig)
        async with server.running(), Client(server.server, logging_callback=on_log, **client) as session:
            if set_level is not None:
                await session.set_logging_level(set_level)  # type: ignore[arg-type]
            result = await session.call_tool("log_every_level", {})
            assert result.is_error is False
    return got


ALL = [
    ("debug", "a debug line"),
    ("info", "a info line"),
    ("notice", "a notice line"),
    ("warning", "a warning line"),
    ("error", "an error line from a thread"),
]


async def test_a_2025_client_gets_no_log_lines_until_it_sets_a_level(workspace: Path) -> None:
    assert await calls_logging(workspace, mode="legacy") == []


@pytest.mark.parametrize("level", ["debug", "warning", "emergency"])
async def test_a_2025_client_gets_the_lines_at_or_above_the_level_it_set_in_order(workspace: Path, level: str) -> None:
    got = await calls_logging(workspace, mode="legacy", set_level=level)
    assert got == [line for line in ALL if line[0] in at_or_above(level)]  # type: ignore[arg-type]


async def test_a_2026_client_opts_in_per_request_with_its_log_level(workspace: Path) -> None:
    assert await calls_logging(workspace) == []
    assert await calls_logging(workspace, log_level="warning") == ALL[3:]
