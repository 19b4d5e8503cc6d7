"""Python API shapes from the seeds: keyword arguments, JSON Schema tools with a handler, native results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig import Rig, ToolContext, schema_tool, tool
from toolrig.errors import DefinitionError
from toolrig.registry import Registry


@dataclass
class ToolResult:  # the native design's result type, as its users define it
    success: bool
    data: Any = None
    error: str | None = None


@tool
def lookup(key: str) -> ToolResult:
    """Look a key up in a tiny table."""
    table = {"a": {"value": 1}, "b": 2}
    if key not in table:
        return ToolResult(False, error=f"no key {key!r}")
    return ToolResult(True, table[key])


def shout(args: dict[str, Any]) -> dict[str, Any]:
    return {"text": str(args["text"]).upper(), "times": args.get("times", 1)}


async def where(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(True, {"root": ctx.workspace.root.name, "echo": args})


SHOUT = schema_tool(
    "shout",
    "Shout a text.",
    {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1}, "times": {"type": "integer", "minimum": 1}},
        "required": ["text"],
        "additionalProperties": False,
    },
    shout,
    read_only=True,
)
WHERE = schema_tool("where", "Say where the workspace is.", {"type": "object", "properties": {}}, where)


@pytest.fixture
def seeded(workspace: Path) -> Rig:
    return Rig(workspace, config={}, registry=Registry([lookup, SHOUT, WHERE]), tools=())


def test_call_sync_takes_the_arguments_as_keywords(workspace: Path) -> None:
    rig = Rig(workspace, config={})
    assert rig.call_sync("calculate", expression="2+2").output == {"result": 4}
    timed = rig.call_sync("run_command", command="echo hi", timeout_seconds=5)  # the tool's own field
    assert timed.output is not None and timed.output["stdout"] == "hi\n"
    assert rig.call_sync("calculate", expression="1+1", call_id="call_mine").meta.call_id == "call_mine"


def test_a_schema_tool_checks_its_schema_and_calls_the_handler(seeded: Rig) -> None:
    assert seeded.call_sync("shout", text="hey", times=2).output == {"text": "HEY", "times": 2}
    bad = seeded.call_sync("shout", {"text": "", "extra": 1})
    assert bad.is_error and bad.error_type == "invalid_input"
    assert "'text'" in (bad.message or "") and "extra" in (bad.message or "")
    assert seeded.schemas("json")[1]["input_schema"]["required"] == ["text"]


def test_an_async_schema_tool_gets_the_context_and_may_return_a_native_result(seeded: Rig) -> None:
    out = seeded.call_sync("where", {"k": "v"}).output
    assert out == {"root": seeded.workspace.root.name, "echo": {"k": "v"}}


def test_a_tool_returning_a_native_result_succeeds_with_its_data_or_fails_with_its_error(seeded: Rig) -> None:
    assert seeded.call_sync("lookup", key="a").output == {"value": 1}
    assert seeded.call_sync("lookup", key="b").output == {"result": 2}
    failed = seeded.call_sync("lookup", key="zz")
    assert failed.is_error and failed.error_type == "invalid_input" and failed.message == "no key 'zz'"


def test_a_schema_that_is_not_an_object_schema_is_refused_at_definition() -> None:
    with pytest.raises(DefinitionError):
        schema_tool("x", "d", {"type": "array"}, shout)
    with pytest.raises(DefinitionError):
        schema_tool("x", "d", {"type": "object", "properties": {"a": {"type": 12}}}, shout)


@given(args=st.dictionaries(st.text(max_size=6), st.one_of(st.none(), st.integers(), st.text(max_size=6)), max_size=4))
def test_any_arguments_get_a_result_never_an_exception(args: dict[str, Any], tmp_path_factory: Any) -> None:
    rig = Rig(tmp_path_factory.mktemp("ws"), config={}, registry=Registry([SHOUT]))
    result = rig.call_sync("shout", args)
    assert result.is_error or (result.output is not None and "text" in result.output)
    assert result.error_type != "internal"
