"""Provider-neutral tool descriptions: JSON Schema in and out, plus the flags programs care about."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolrig.registry import AnyTool


def json_tool(tool: AnyTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "group": tool.group,
        "input_schema": tool.input_schema(),
        "output_schema": tool.output_schema(),
        "read_only": tool.read_only,
        "destructive": tool.destructive,
        "open_world": tool.open_world,
        "terminal": tool.terminal,
    }


def json_tools(tools: Iterable[AnyTool]) -> list[dict[str, Any]]:
    return [json_tool(t) for t in tools]
