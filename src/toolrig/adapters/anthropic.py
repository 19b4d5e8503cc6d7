"""Anthropic Messages API shapes: tool params in, ``tool_result`` blocks out. Pure data, no SDK import."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolrig.registry import AnyTool
from toolrig.result import ToolResult


def tool_param(tool: AnyTool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema()}


def tool_params(tools: Iterable[AnyTool], *, cache: bool = False) -> list[dict[str, Any]]:
    """All tools; with ``cache`` the last one carries the breakpoint that caches the whole tool list."""
    params = [tool_param(t) for t in tools]
    if cache and params:
        params[-1]["cache_control"] = {"type": "ephemeral"}
    return params


def tool_result_block(tool_use_id: str, result: ToolResult) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": result.to_json()}
    if result.is_error:
        block["is_error"] = True
    return block
