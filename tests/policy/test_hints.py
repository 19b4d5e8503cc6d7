"""MCP hints come from what each tool declares (its flags and Subject marks), over the whole catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig import Rig
from toolrig.adapters.mcp_server import mcp_tool
from toolrig.policy.hints import OUTWARD_KINDS, hints
from toolrig.registry import AnyTool, Registry

CATALOG = Registry.default().list()


@pytest.mark.parametrize("tool", CATALOG, ids=lambda t: t.name)
def test_every_tool_listed_over_mcp_carries_the_hints_its_declarations_imply(tool: AnyTool) -> None:
    listed = mcp_tool(tool).annotations
    assert listed is not None
    assert listed.read_only_hint is tool.read_only
    if tool.subject_kind in OUTWARD_KINDS:
        assert listed.open_world_hint is True  # a URL, a recipient or a command reaches past the workspace
    if tool.subject_kind == "command" and not tool.read_only:
        assert listed.destructive_hint is True
    if tool.read_only:
        assert listed.destructive_hint is None


def test_a_new_tool_with_a_url_subject_is_open_world_without_saying_so(workspace: Path) -> None:
    from typing import Annotated

    from toolrig import Tool, ToolInput, ToolOutput
    from toolrig.definition import Subject

    class In(ToolInput):
        url: Annotated[str, Subject("url")]

    class Ping(Tool[In, ToolOutput]):
        name = "ping_url"
        description = "Pings a URL."

        def execute(self, input: In, ctx: object) -> ToolOutput:
            return ToolOutput()

    declared = hints(Ping())
    assert declared.open_world and declared.destructive is False
    with Rig(workspace, tools=[Ping()]) as rig:
        assert mcp_tool(rig.registry.get("ping_url")).annotations.open_world_hint is True  # type: ignore[union-attr]
