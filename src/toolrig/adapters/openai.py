"""OpenAI function tools (chat completions), strict mode only where the schema really allows it.

Pure data, no SDK import. One tool whose schema cannot be strict never breaks the others: it is sent
without ``strict`` and a warning is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.schema import to_strict

log = logging.getLogger("toolrig.adapters.openai")


def function_tool(tool: AnyTool, *, strict: bool | None = None) -> dict[str, Any]:
    """One function tool; strict mode is sent only where the schema allows it.

    ``strict=None`` sends strict mode when the schema is compatible; ``True`` asks for it (and warns when it
    cannot be had); ``False`` never sends it.
    """
    schema = tool.input_schema()
    function: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if strict is False:
        function["parameters"] = schema
    else:
        converted = to_strict(schema)
        if converted.compatible:
            function["parameters"] = converted.schema
            function["strict"] = True
        else:
            if strict:
                log.warning("tool %r cannot use strict mode: %s", tool.name, "; ".join(converted.problems))
            function["parameters"] = schema
    return {"type": "function", "function": function}


def function_tools(tools: Iterable[AnyTool], *, strict: bool | None = None) -> list[dict[str, Any]]:
    return [function_tool(t, strict=strict) for t in tools]


def tool_message(tool_call_id: str, result: ToolResult) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": tool_call_id, "content": result.to_json()}
