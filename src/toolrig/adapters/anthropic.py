"""Anthropic Messages API shapes: tool params in, ``tool_result`` blocks out. Pure data, no SDK import."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolrig.content import PORTABLE_IMAGE_TYPES, ContentPart, ImagePart, ResourcePart, TextPart, describe
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
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": tool_result_content(result)}
    if result.is_error:
        block["is_error"] = True
    return block


def content_blocks(parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """Parts as blocks a ``tool_result`` may hold: text, image (png/jpeg/gif/webp) and document (PDF, text).

    What the Messages API cannot carry in a tool result (audio, other binaries, other image types) becomes a
    text block that says so, so the model knows something was left out.
    """
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart) and part.media_type in PORTABLE_IMAGE_TYPES:
            source = {"type": "base64", "media_type": part.media_type, "data": part.data}
            blocks.append({"type": "image", "source": source})
        elif isinstance(part, ResourcePart) and part.text is not None:
            blocks.append({"type": "text", "text": f"[resource {part.uri}]\n{part.text}"})
        elif isinstance(part, ResourcePart) and part.media_type == "application/pdf" and part.blob is not None:
            source = {"type": "base64", "media_type": "application/pdf", "data": part.blob}
            blocks.append({"type": "document", "source": source, "title": part.uri[:500]})
        else:
            blocks.append({"type": "text", "text": f"[{describe(part)} left out: a tool result cannot carry it here]"})
    return blocks


def tool_result_content(result: ToolResult) -> str | list[dict[str, Any]]:
    """The JSON alone, or (when the result has parts) the JSON as the first text block, then the parts."""
    if not result.content:
        return result.to_json()
    return [{"type": "text", "text": result.to_json()}, *content_blocks(result.content)]
