"""Every profile's faces through every adapter: the SDKs' own types accept them, strict only when valid."""

from __future__ import annotations

import jsonschema
import pytest
from pydantic import TypeAdapter

from tests.contract.test_adapters import assert_openai_strict_rules
from toolrig.adapters.anthropic import tool_param
from toolrig.adapters.faces import FaceTool, faced
from toolrig.adapters.mcp_server import mcp_tool
from toolrig.adapters.openai import function_tool
from toolrig.profiles import NAMES, get_profile
from toolrig.registry import Registry

TOOLS = Registry.default(entry_points=False).list()
FACES = [t for name in NAMES for t in faced(TOOLS, get_profile(name)) if isinstance(t, FaceTool)]
IDS = [f"{t.face.name}->{t.canonical.name}" for t in FACES]


@pytest.mark.parametrize("face", FACES, ids=IDS)
def test_a_face_is_an_anthropic_tool_param(face: FaceTool) -> None:
    from anthropic.types import ToolParam

    param = TypeAdapter(ToolParam).validate_python(tool_param(face))
    assert param["name"] == face.name and param["input_schema"]["type"] == "object"
    jsonschema.Draft202012Validator.check_schema(dict(param["input_schema"]))


@pytest.mark.parametrize("face", FACES, ids=IDS)
def test_a_face_is_an_openai_function_strict_only_when_valid(face: FaceTool) -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam

    param = TypeAdapter(ChatCompletionFunctionToolParam).validate_python(function_tool(face, strict=True))
    function = param["function"]
    jsonschema.Draft202012Validator.check_schema(function["parameters"])
    if function.get("strict"):
        assert_openai_strict_rules(function["parameters"])


@pytest.mark.parametrize("face", FACES, ids=IDS)
def test_a_face_lists_as_an_mcp_tool_with_its_tools_hints(face: FaceTool) -> None:
    from mcp.types import Tool

    again = Tool.model_validate(mcp_tool(face).model_dump(by_alias=True, mode="json", exclude_none=True))
    assert again.name == face.name and again.input_schema == face.input_schema()
    assert again.annotations is not None and again.annotations.read_only_hint is face.canonical.read_only
