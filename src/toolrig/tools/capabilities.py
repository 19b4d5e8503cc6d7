"""capabilities_refresh: rewrite the summary of what the agent may do here, from the policy in force.

Trust model: takes no input beyond the call; it writes only toolrig's own ``.toolrig/capabilities.md``
(through the rig, never through a model-given path) and reads the verdicts of the config in force.
"""

from __future__ import annotations

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError


class CapabilitiesRefreshInput(ToolInput):
    pass


class CapabilitiesRefreshOutput(ToolOutput):
    summary: str = Field(description="The new summary: one line per theme, with what the policy says of it.")
    grouping: str = Field(description="'by tool group', or 'by the configured model'.")


class CapabilitiesRefresh(Tool[CapabilitiesRefreshInput, CapabilitiesRefreshOutput]):
    name = "capabilities_refresh"
    group = "capabilities"
    sequential = True
    read_only = True  # it rewrites toolrig's own summary file, nothing of the project
    description = (
        "Rebuild the summary of what you can do here (the capabilities section of your instructions): one line "
        "per theme of your tools, with what the policy says of it (approval needed, rate limits, denied paths "
        "or domains). Use it after tools or the policy changed."
    )

    async def execute(self, input: CapabilitiesRefreshInput, ctx: ToolContext) -> CapabilitiesRefreshOutput:
        if ctx.catalog is None:
            raise ToolError(ErrorType.UNAVAILABLE, "No tool catalog is available in this context.")
        text, grouping = await ctx.catalog.refresh_capabilities(ctx.agent_id)
        return CapabilitiesRefreshOutput(summary=text, grouping=grouping)


TOOLS = [CapabilitiesRefresh()]
