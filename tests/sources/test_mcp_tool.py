"""A remote tool's results and arguments, with the SDK's own result types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import CallToolResult, EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents

from toolrig.config import McpServerConfig
from toolrig.errors import ToolError
from toolrig.sources.mcp_client import McpServer
from toolrig.sources.mcp_tool import McpArguments, tool_output
from toolrig.sources.mcp_trust import TrustStore


def test_text_blocks_are_joined_and_binary_content_is_described_not_inlined() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            ImageContent(data="QUJD" * 100, mime_type="image/png"),
            ResourceLink(uri="file:///x.txt", name="x"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///y.txt", text="inside", mime_type="text/plain")),
            TextContent(text="last"),
        ]
    )
    output = tool_output("srv", "t", result)
    assert output.text == "first\ninside\nlast"
    assert output.attachments == [
        {"type": "image", "mime_type": "image/png", "bytes": 300},
        {"type": "resource_link", "uri": "file:///x.txt", "name": "x"},
        {"type": "resource", "uri": "file:///y.txt", "mime_type": "text/plain"},
    ]
    assert "QUJD" not in output.model_dump_json()


def test_structured_content_that_is_not_an_object_is_wrapped() -> None:
    output = tool_output("srv", "t", CallToolResult(content=[], structured_content=[1, 2]))
    assert output.structured == {"value": [1, 2]}


def test_an_error_result_becomes_a_tool_error_naming_server_and_tool() -> None:
    with pytest.raises(ToolError) as caught:
        tool_output("srv", "t", CallToolResult(content=[TextContent(text="no such file")], is_error=True))
    assert caught.value.error_type == "invalid_input"
    assert caught.value.message == "The MCP server 'srv' reported an error from 't': no such file"


def test_arguments_are_checked_against_the_remote_schema_before_any_gate(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["n"],
    }
    server = McpServer("srv", McpServerConfig(command="unused"), store=TrustStore(tmp_path / "t.json"))
    [tool] = server.make_tools([{"name": "t", "inputSchema": schema}])
    assert issubclass(tool.input_model, McpArguments)
    assert tool.input_model.model_validate({"n": 2, "tags": ["a"]}).model_extra == {"n": 2, "tags": ["a"]}
    with pytest.raises(ToolError) as caught:
        tool.input_model.model_validate({"n": 0, "tags": [1]})
    assert "2 invalid arguments" in caught.value.message
    assert "'n': 0 is less than the minimum of 1" in caught.value.message
    assert "'tags.0': 1 is not of type 'string'" in caught.value.message
    assert tool.subjects(tool.input_model.model_validate({"n": 1, "path": "/etc/x"})) == ["srv/t", "/etc/x"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(
    structured=st.dictionaries(st.text(max_size=5), JSON, max_size=4), other=st.text(max_size=30), indent=st.booleans()
)
def test_the_text_twin_of_structured_content_is_read_once_and_any_other_text_kept(
    structured: dict[str, object], other: str, indent: bool
) -> None:
    """Issue 33 item 13: toolrig as its own client showed the model the same output twice (once in an envelope)."""
    twin = json.dumps(structured, indent=2 if indent else None)
    result = CallToolResult(content=[TextContent(text=twin), TextContent(text=other)], structured_content=structured)
    output = tool_output("srv", "t", result)
    assert output.structured == structured
    assert output.text == other  # the twin dropped, the rest (a note) kept
    if other.strip() != "" and not (other.lstrip().startswith(("{", "[")) and _parses_to(other, structured)):
        alone = tool_output(
            "srv", "t", CallToolResult(content=[TextContent(text=other)], structured_content=structured)
        )
        assert alone.text == other


def _parses_to(text: str, value: object) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
