"""Every registered tool through every adapter: the SDKs' own types accept what we emit."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter

from toolrig.adapters.anthropic import tool_param, tool_params, tool_result_block
from toolrig.adapters.openai import function_tool, tool_message
from toolrig.adapters.plain import json_tool
from toolrig.registry import AnyTool, Registry
from toolrig.result import ToolResult

TOOLS = Registry.default(entry_points=False).list()
IDS = [t.name for t in TOOLS]

STRICT_KEYWORDS = {
    "type", "description", "title", "enum", "const", "properties", "required", "additionalProperties", "items",
    "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minItems", "maxItems",
}  # fmt: skip


def assert_openai_strict_rules(node: Any, path: str = "") -> None:
    """OpenAI's documented strict-mode rules, checked independently of the code that produced the schema."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            assert_openai_strict_rules(item, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    unknown = set(node) - STRICT_KEYWORDS
    assert not unknown, f"{path}: keywords strict mode rejects: {unknown}"
    if node.get("type") == "object" or "properties" in node:
        assert node.get("additionalProperties") is False, path
        assert sorted(node.get("required", [])) == sorted(node.get("properties", {})), path
    if "$ref" in node:
        assert set(node) == {"$ref"}, f"{path}: nothing may stand beside $ref"
    for key in ("properties", "$defs"):
        for name, sub in node.get(key, {}).items():
            assert_openai_strict_rules(sub, f"{path}/{key}/{name}")
    for key in ("items", "anyOf"):
        if key in node:
            assert_openai_strict_rules(node[key], f"{path}/{key}")


@pytest.mark.parametrize("tool", TOOLS, ids=IDS)
def test_anthropic_tool_param_is_accepted_by_the_sdk_type(tool: AnyTool) -> None:
    from anthropic.types import ToolParam

    param = TypeAdapter(ToolParam).validate_python(tool_param(tool))
    assert param["name"] == tool.name
    assert param["input_schema"]["type"] == "object"
    jsonschema.Draft202012Validator.check_schema(dict(param["input_schema"]))


@pytest.mark.parametrize("tool", TOOLS, ids=IDS)
def test_openai_function_tool_is_accepted_by_the_sdk_type_and_strict_only_when_valid(tool: AnyTool) -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam

    param = TypeAdapter(ChatCompletionFunctionToolParam).validate_python(function_tool(tool))
    function = param["function"]
    assert function["name"] == tool.name
    jsonschema.Draft202012Validator.check_schema(function["parameters"])
    if function.get("strict"):
        assert_openai_strict_rules(function["parameters"])
    never = TypeAdapter(ChatCompletionFunctionToolParam).validate_python(function_tool(tool, strict=False))
    assert "strict" not in never["function"]


@pytest.mark.parametrize("tool", TOOLS, ids=IDS)
def test_plain_json_description_carries_both_schemas(tool: AnyTool) -> None:
    described = json_tool(tool)
    jsonschema.Draft202012Validator.check_schema(described["input_schema"])
    if described["output_schema"] is not None:
        jsonschema.Draft202012Validator.check_schema(described["output_schema"])
    assert described["read_only"] is tool.read_only


def test_a_schema_that_cannot_be_strict_is_sent_without_strict_and_others_are_unaffected() -> None:
    from pydantic import BaseModel

    from toolrig import Tool, ToolContext

    class Loose(BaseModel):
        labels: dict[str, str]

    class LooseTool(Tool[Loose, Loose]):
        name = "loose"
        description = "Takes a free-form mapping."

        def execute(self, input: Loose, ctx: ToolContext) -> Loose:
            return input

    tools = [LooseTool(), *TOOLS]
    emitted = [function_tool(t, strict=True) for t in tools]
    assert "strict" not in emitted[0]["function"]
    assert emitted[0]["function"]["parameters"]["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert all(e["function"].get("strict") for e in emitted[1:] if e["function"]["name"] == "calculate")


def test_tool_results_map_to_each_providers_message_shape() -> None:
    from anthropic.types import ToolResultBlockParam
    from openai.types.chat import ChatCompletionToolMessageParam

    failed = ToolResult.error("denied", "no")
    block = TypeAdapter(ToolResultBlockParam).validate_python(tool_result_block("toolu_1", failed))
    assert block["is_error"] is True and '"error_type":"denied"' in str(block["content"])
    message = TypeAdapter(ChatCompletionToolMessageParam).validate_python(tool_message("call_1", ToolResult.ok({})))
    assert message["content"] == '{"is_error":false,"output":{}}'


def test_the_tool_list_can_carry_a_cache_breakpoint() -> None:
    params = tool_params(TOOLS, cache=True)
    assert params[-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in p for p in params[:-1])
