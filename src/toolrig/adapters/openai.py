"""OpenAI function tools (chat completions), strict mode only where the schema really allows it.

Pure data, no SDK import. One tool whose schema cannot be strict never breaks the others: it is sent
without ``strict`` and a warning is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from toolrig.content import ContentPart, ImagePart, ResourcePart, TextPart, describe
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


def media_parts(parts: Iterable[ContentPart], label: str) -> list[dict[str, Any]]:
    """Parts as user-message content parts: images as data URLs, PDFs as files, the rest as text.

    Chat completions ``tool`` messages take text only, so a result's images travel in a ``user`` message
    placed after all the tool messages of the turn (the API wants the tool messages right after the calls);
    ``label`` says which call they came from. Audio becomes a note: ``input_audio`` parts are refused by
    models without audio input, and one refused part would fail the whole request.
    """
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            out.append({"type": "image_url", "image_url": {"url": f"data:{part.media_type};base64,{part.data}"}})
        elif isinstance(part, ResourcePart) and part.text is not None:
            out.append({"type": "text", "text": f"[resource {part.uri}]\n{part.text}"})
        elif isinstance(part, ResourcePart) and part.media_type == "application/pdf" and part.blob is not None:
            name = part.uri.rsplit("/", 1)[-1][:200] or "document.pdf"
            file = {"filename": name, "file_data": f"data:application/pdf;base64,{part.blob}"}
            out.append({"type": "file", "file": file})
        else:
            out.append({"type": "text", "text": f"[{describe(part)} left out: this endpoint cannot take it]"})
    if out:
        out.insert(0, {"type": "text", "text": f"Content returned by {label} (tool messages hold text only):"})
    return out


def tool_messages(results: Iterable[tuple[str, str, ToolResult]]) -> list[dict[str, Any]]:
    """``tool`` messages for (call id, tool name, result) in order, then one ``user`` message with their media."""
    messages: list[dict[str, Any]] = []
    media: list[dict[str, Any]] = []
    for call_id, name, result in results:
        messages.append(tool_message(call_id, result))
        media += media_parts(result.content, f"the {name} call {call_id}")
    if media:
        messages.append({"role": "user", "content": media})
    return messages
