"""Every registered tool as an MCP server lists it: accepted by the SDK's types, schemas a client can use."""

from __future__ import annotations

import json

import jsonschema
import pytest
from mcp.types import CallToolResult, ListToolsResult, Tool

from toolrig.adapters.mcp_server import call_tool_result, mcp_tool
from toolrig.registry import AnyTool, Registry
from toolrig.result import ToolResult

TOOLS = Registry.default(entry_points=False).list()


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_every_tool_lists_as_an_mcp_tool_with_usable_schemas_and_hints(tool: AnyTool) -> None:
    listed = mcp_tool(tool)
    wire = listed.model_dump(by_alias=True, mode="json", exclude_none=True)
    again = Tool.model_validate(wire)  # what a client parses back
    assert again.name == tool.name and again.description == tool.description
    assert again.input_schema["type"] == "object"
    jsonschema.Draft202012Validator.check_schema(again.input_schema)
    if again.output_schema is not None:
        assert again.output_schema["type"] == "object"  # 2025-era clients reject anything else
        jsonschema.Draft202012Validator.check_schema(again.output_schema)
    assert again.annotations is not None
    assert again.annotations.read_only_hint is tool.read_only
    assert again.annotations.open_world_hint is tool.open_world
    ListToolsResult(tools=[again])


def test_a_result_carries_structured_content_and_the_same_json_as_text() -> None:
    """The text is the output's JSON, not toolrig's envelope around it (issue 33 item 13): MCP says isError."""
    ok = call_tool_result(ToolResult.ok({"n": 1}, notes=["cut"]), structured=True)
    assert ok.structured_content == {"n": 1} and ok.is_error is False
    assert [block.text for block in ok.content] == ['{"n":1}', "cut"]  # type: ignore[union-attr]
    failed = call_tool_result(ToolResult.error("not_found", "no such file", "Check the path."), structured=True)
    assert failed.is_error is True and failed.structured_content is None
    assert json.loads(failed.content[0].text) == {  # type: ignore[union-attr]
        "error_type": "not_found",
        "message": "no such file",
        "next_action_hint": "Check the path.",
    }
    CallToolResult.model_validate(failed.model_dump(by_alias=True, mode="json"))
