"""The public API is deliberately small; changing it is a decision, so this test names it."""

from __future__ import annotations

import toolrig

EXPECTED = [
    "Config",
    "ErrorType",
    "Registry",
    "Rig",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolInput",
    "ToolOutput",
    "ToolResult",
    "__version__",
    "schema_tool",
    "tool",
]


def test_exported_members_are_exactly_the_documented_ones() -> None:
    assert sorted(toolrig.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(toolrig, name) is not None


def test_the_tool_decorator_is_not_shadowed_by_a_module() -> None:
    import toolrig.definition
    import toolrig.function_tool  # its home: a module named after the decorator would shadow it

    assert callable(toolrig.tool) and toolrig.tool.__module__ == "toolrig.function_tool"
    assert toolrig.definition.tool is toolrig.tool  # still found where it was defined before
    import toolrig.schema_tools  # named apart from the function, which a module of its name would shadow

    assert callable(toolrig.schema_tool) and toolrig.schema_tool is toolrig.definition.schema_tool


def test_unknown_attributes_raise_attribute_error() -> None:
    try:
        toolrig.nope  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
