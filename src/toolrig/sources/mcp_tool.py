"""One tool of an MCP server, as the registry, the executor and every adapter see it.

Trust model: everything in a definition is the server's word. Names are made provider-safe, descriptions
and schemas cut to a budget, arguments checked against the schema without running the server's regular
expressions, and results turned into plain output (binary content described, never inlined).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.schema import budget_schema, schema_checker
from toolrig.schema_tools import SchemaArguments

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from toolrig.sources.mcp_client import McpServer

log = logging.getLogger("toolrig.mcp")

MAX_DESCRIPTION = 4000
MAX_NAME = 256
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_KEPT = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def provider_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """``server__tool`` in the characters every provider accepts, at most 64 long and unique among ``taken``."""
    taken = set(taken)
    name = f"{server}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= 64 and name not in taken and name == f"{server}__{tool}":
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    candidate, extra = f"{name[:55]}_{digest}", 0
    while candidate in taken:  # only a server naming its tools after our mangled names gets here
        extra += 1
        candidate = f"{name[:50]}_{digest}{extra}"
    return candidate


def definition_of(tool: Any) -> dict[str, Any] | None:
    """What the model will read of an MCP ``Tool`` (what the trust store keeps and fingerprints), as JSON.

    Cut to budget here, once: a description past ``MAX_DESCRIPTION`` or schema nodes past the budget are
    never shown, so they are not kept either. A tool with an absurd name is left out (None).
    """
    data: dict[str, Any] = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    name = data.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        log.warning("an MCP tool with an unusable name was left out: %r", str(name)[:80])
        return None
    kept = {key: data[key] for key in _KEPT if key in data}
    for key in ("title", "description"):
        if isinstance(kept.get(key), str):
            kept[key] = kept[key][:MAX_DESCRIPTION]
    kept["inputSchema"] = budget_schema(kept.get("inputSchema"))
    if "outputSchema" in kept:
        kept["outputSchema"] = budget_schema(kept["outputSchema"])
    return kept


class McpArguments(SchemaArguments):
    """Whatever object the remote schema describes; checked against that schema by a subclass per tool.

    ``schema_tool``'s arguments, under the name the MCP tools have always used (one class, not a copy).
    """


class McpToolOutput(ToolOutput):
    text: str = Field(default="", description="The text the server returned.")
    structured: dict[str, Any] | None = Field(default=None, description="The server's structured result, if any.")
    attachments: list[dict[str, Any]] = Field(
        default_factory=list, description="Non-text content (images, audio, resource links), described, not inlined."
    )


def _schema_checker(schema: dict[str, Any]) -> Callable[[dict[str, Any]], list[str]] | None:
    """A JSON Schema check naming every bad field; None when the schema itself cannot be used."""
    return schema_checker(schema)  # one checker for foreign schemas: MCP tools and schema_tool()


class McpTool(Tool[McpArguments, McpToolOutput]):
    """One tool of an MCP server, as the registry and every adapter see it."""

    group = "mcp"
    input_model = McpArguments
    output_model = McpToolOutput
    is_async = True

    def __init__(self, server: McpServer, definition: dict[str, Any], name: str) -> None:
        self.server = server
        self.remote_name: str = definition["name"]
        self.name = name
        self.display_name = f"{server.name}/{self.remote_name}"
        text = definition.get("description") or definition.get("title") or self.remote_name
        self.description = str(text)[:MAX_DESCRIPTION]
        self._schema = budget_schema(definition.get("inputSchema"))
        hints = definition.get("annotations") or {}
        self.open_world = True
        if server.config.trust_annotations:
            self.read_only = hints.get("readOnlyHint") is True
            self.destructive = not self.read_only and hints.get("destructiveHint") is not False
            self.open_world = hints.get("openWorldHint") is not False
        else:
            self.read_only, self.destructive = False, True
        self.timeout_seconds = server.config.timeout_seconds
        model_name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part) + "Arguments"
        model = create_model(model_name, __base__=McpArguments)
        model.checker = _schema_checker(self._schema)
        self.input_model = model

    def input_schema(self) -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(json.dumps(self._schema))  # a copy callers may change
        return copied

    def subjects(self, input: McpArguments) -> list[str]:
        """The string arguments (paths, URLs, queries): what approvals and the audit log show."""
        values = [v for v in (input.model_extra or {}).values() if isinstance(v, str)]
        return [f"{self.server.name}/{self.remote_name}", *(v[:200] for v in values[:10])]

    async def execute(self, input: McpArguments, ctx: ToolContext) -> McpToolOutput:
        return await self.server.call(self.remote_name, dict(input.model_extra or {}), ctx)


def tool_output(server: str, remote: str, result: CallToolResult) -> McpToolOutput:
    """A CallToolResult as a tool output; an ``isError`` result becomes a ToolError the model can act on."""
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            size = len(block.data) * 3 // 4
            attachments.append({"type": block.type, "mime_type": block.mime_type, "bytes": size})
        elif isinstance(block, ResourceLink):
            attachments.append({"type": block.type, "uri": str(block.uri), "name": block.name})
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                texts.append(text)
            attachments.append({"type": block.type, "uri": str(resource.uri), "mime_type": resource.mime_type})
    structured = result.structured_content
    if structured is not None and texts and _same_json(texts[0], structured):
        texts.pop(0)  # structuredContent's text twin (the spec asks servers for both): the model reads it once
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The MCP server '{server}' reported an error from '{remote}': {text[:4000] or 'no details'}",
            "Read the server's message: fix the arguments, or use another approach.",
        )
    if structured is not None and not isinstance(structured, dict):
        structured = {"value": structured}
    return McpToolOutput(text=text, structured=structured, attachments=attachments)


def _same_json(text: str, value: Any) -> bool:
    """Whether ``text`` is ``value`` as JSON (any spacing or key order)."""
    if not text.lstrip().startswith(("{", "[")):
        return False  # the common case, prose, without a parse
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
