"""toolrig's content parts as MCP content blocks: what a call's result and a resource or prompt read return.

Apart from the server and the resources so that both use it without importing each other; ``mcp`` is
imported only inside (its cold import is most of a second).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from toolrig.content import AudioPart, ContentPart, ImagePart, TextPart

if TYPE_CHECKING:
    from mcp.types import ContentBlock

    from toolrig.result import ToolResult


def mcp_content(parts: list[ContentPart]) -> list[ContentBlock]:
    """Content parts as MCP blocks: ``ImageContent``, ``AudioContent``, ``EmbeddedResource``, ``TextContent``."""
    if not parts:
        return []
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        TextContent,
        TextResourceContents,
    )

    blocks: list[ContentBlock] = []
    for part in parts:
        if isinstance(part, TextPart):
            blocks.append(TextContent(text=part.text))
        elif isinstance(part, ImagePart):
            blocks.append(ImageContent(data=part.data, mime_type=part.media_type))
        elif isinstance(part, AudioPart):
            blocks.append(AudioContent(data=part.data, mime_type=part.media_type))
        elif part.text is not None:
            resource = TextResourceContents(uri=part.uri, mime_type=part.media_type, text=part.text)
            blocks.append(EmbeddedResource(resource=resource))
        else:
            blob = BlobResourceContents(uri=part.uri, mime_type=part.media_type, blob=part.blob or "")
            blocks.append(EmbeddedResource(resource=blob))
    return blocks


def content_json(parts: list[ContentPart]) -> list[dict[str, Any]]:
    """``mcp_content`` as wire JSON, for the fast path that writes responses itself."""
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in mcp_content(parts)]


def result_texts(result: ToolResult) -> list[str]:
    """The text blocks of a ``tools/call`` result: the output's JSON (``structuredContent``'s twin) or the error.

    Not toolrig's own envelope (``{"is_error": ..., "output": ...}``): MCP says ``isError`` itself, and a client
    that is toolrig again wrapped the envelope in its own. An error keeps its type and hint, for a program and
    a model alike; notes (an output cut, a handle to the rest) follow as blocks of their own.
    """
    data = result.model_dump(mode="json", exclude_none=True)
    notes = data.pop("notes", [])
    body = data.get("output", {}) if not result.is_error else {k: v for k, v in data.items() if k != "is_error"}
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    except ValueError:  # an integer past Python's 4,300-digit str() limit: pydantic's serializer writes it whole
        text = to_json(body).decode()
    return [text, *notes]
