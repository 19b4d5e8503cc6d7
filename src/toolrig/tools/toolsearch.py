"""tool_search and tool_info: the model looks up tools (built-in, plugins, MCP servers') when it needs them.

Trust model: the query is model text and only ever ranks; what can be found is exactly what the calling
agent is offered (``ctx.catalog``), so a search never reveals a tool the policy hides from it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from toolrig.context import ToolCatalog, ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.skills.toolindex import ToolIndex, find

MAX_LISTED = 200


class ToolSearchInput(ToolInput):
    query: str = Field(
        default="",
        max_length=500,
        description="What you want to do, in a few words ('create a github issue'); empty lists every tool.",
    )
    group: str | None = Field(default=None, description="Only tools of this group (e.g. 'mcp', 'files').")
    max_results: int = Field(default=10, ge=1, le=MAX_LISTED)


class FoundTool(ToolOutput):
    name: str = Field(description="The name to call it by.")
    display_name: str | None = None
    group: str
    description: str = Field(description="The first line of its description.")


class ToolSearchOutput(ToolOutput):
    tools: list[FoundTool]
    total: int = Field(description="How many tools matched (or exist, for an empty query).")


class ToolInfoInput(ToolInput):
    name: str = Field(description="A tool's name or display name, as tool_search returned it.")


class ToolInfoOutput(ToolOutput):
    name: str
    display_name: str | None
    group: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    read_only: bool
    destructive: bool
    open_world: bool


def _catalog(ctx: ToolContext) -> ToolCatalog:
    if ctx.catalog is None:
        raise ToolError(ErrorType.UNAVAILABLE, "No tool catalog is available in this context.")
    return ctx.catalog


def _summary(tool: Any) -> FoundTool:
    first = tool.description.strip().split("\n", 1)[0]
    return FoundTool(name=tool.name, display_name=tool.display_name, group=tool.group, description=first[:300])


class ToolSearch(Tool[ToolSearchInput, ToolSearchOutput]):
    name = "tool_search"
    aliases = ("mcp_search", "mcp_list_tools")  # Botholomew's names for the same lookup
    group = "toolsearch"
    read_only = True
    description = (
        "Search the tools you can use (built-in and from MCP servers) by what they do; BM25 over their names, "
        "descriptions and parameter descriptions. Returns names and one-line descriptions, best first; an empty "
        "query lists them all. Use tool_info for a tool's full parameters."
    )

    def execute(self, input: ToolSearchInput, ctx: ToolContext) -> ToolSearchOutput:
        tools = [t for t in _catalog(ctx).offered(ctx.agent_id) if input.group in (None, t.group)]
        if not input.query.strip():
            return ToolSearchOutput(tools=[_summary(t) for t in tools[: input.max_results]], total=len(tools))
        hits = ToolIndex(tools).search(input.query, MAX_LISTED)
        return ToolSearchOutput(tools=[_summary(h.tool) for h in hits[: input.max_results]], total=len(hits))


class ToolInfo(Tool[ToolInfoInput, ToolInfoOutput]):
    name = "tool_info"
    aliases = ("mcp_info",)
    group = "toolsearch"
    read_only = True
    description = "Get one tool's full description and JSON Schemas (parameters and result), by name."

    def execute(self, input: ToolInfoInput, ctx: ToolContext) -> ToolInfoOutput:
        tools = _catalog(ctx).offered(ctx.agent_id)
        tool = find(tools, input.name)
        if tool is None:
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"No tool you can use is called {input.name!r}.",
                "Find tools with tool_search first, then ask about one of the names it returns.",
            )
        return ToolInfoOutput(
            name=tool.name,
            display_name=tool.display_name,
            group=tool.group,
            description=tool.description,
            input_schema=tool.input_schema(),
            output_schema=tool.output_schema(),
            read_only=tool.read_only,
            destructive=tool.destructive,
            open_world=tool.open_world,
        )


TOOLS = [ToolSearch(), ToolInfo()]
