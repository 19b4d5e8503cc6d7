"""Parameter names models guess wrong are accepted as the tool's own, over every tool; ambiguity is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.argnames import ALTERNATIVES, name_plan
from toolrig.arguments import repair_arguments
from toolrig.errors import ErrorType, ToolError
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.schema import model_schema

TOOLS = Registry.default(entry_points=False).list()


def fields_of(tool: Any) -> set[str]:
    return set(model_schema(tool.input_model).get("properties", {}))


CASES = [
    (tool.name, field, alternative)
    for tool in TOOLS
    for field in sorted(fields_of(tool))
    for alternative in ALTERNATIVES.get(field, ())
    if alternative not in fields_of(tool)
    and sum(field2 in fields_of(tool) for field2, alts in ALTERNATIVES.items() if alternative in alts) == 1
]


def tool_named(name: str) -> Any:
    return next(t for t in TOOLS if t.name == name)


def test_the_named_slips_are_among_the_cases() -> None:
    assert ("memory_write", "file_path", "path") in CASES
    assert ("librarian_store", "document_name", "name") in CASES
    assert ("write_file", "path", "file_path") in CASES


@pytest.mark.parametrize(("tool", "field", "alternative"), CASES)
def test_an_alternative_name_is_read_as_the_tools_own(tool: str, field: str, alternative: str) -> None:
    model = tool_named(tool).input_model
    fixed, notes = repair_arguments(model, {alternative: "value"})
    assert field in fixed and alternative not in fixed
    assert any(repr(alternative) in note and repr(field) in note for note in notes)


@pytest.mark.parametrize(("tool", "field", "alternative"), CASES)
def test_a_field_sent_under_both_names_is_refused_clearly(tool: str, field: str, alternative: str) -> None:
    with pytest.raises(ToolError) as caught:
        repair_arguments(tool_named(tool).input_model, {alternative: "a", field: "b"})
    assert caught.value.error_type == ErrorType.INVALID_INPUT
    assert "Ambiguous" in caught.value.message and repr(field) in caught.value.message


@pytest.mark.parametrize("tool", [t.name for t in TOOLS if any("_" in f for f in fields_of(t))])
def test_camel_case_names_are_read_as_snake_case(tool: str) -> None:
    model = tool_named(tool).input_model
    field = next(f for f in sorted(fields_of(tool_named(tool))) if "_" in f)
    camel = field.split("_")[0] + "".join(p.title() for p in field.split("_")[1:])
    fixed, _ = repair_arguments(model, {camel: "v"})
    assert field in fixed or any(field in item for item in fixed.values() if isinstance(item, list))


def test_a_lone_item_at_the_top_level_goes_into_the_tools_list_shape() -> None:
    model = tool_named("list_directory").input_model
    fixed, notes = repair_arguments(model, {"path": "src", "recursive": True})
    assert fixed == {"directories": [{"path": "src", "recursive": True}]} and notes
    fixed, _ = repair_arguments(model, {"directory": ["a", "b"]})
    assert fixed == {"directories": [{"path": "a"}, {"path": "b"}]}
    with pytest.raises(ToolError, match="Ambiguous"):
        repair_arguments(model, {"path": "a", "directories": [{"path": "b"}]})
    with pytest.raises(ToolError, match="Ambiguous"):
        repair_arguments(model, {"path": "a", "dir": "b"})


KEYS = sorted({*ALTERNATIVES, *(a for alts in ALTERNATIVES.values() for a in alts), "filePath", "directory", "x"})


@pytest.mark.parametrize("tool", [t.name for t in TOOLS if name_plan(model_schema(t.input_model)) is not None])
@given(
    args=st.dictionaries(
        st.sampled_from(KEYS), st.one_of(st.text(max_size=5), st.lists(st.text(max_size=3))), max_size=4
    )
)
def test_any_mix_of_names_is_repaired_or_refused_as_invalid_input(tool: str, args: dict[str, Any]) -> None:
    model = tool_named(tool).input_model
    try:
        fixed, _ = repair_arguments(model, args)
    except ToolError as err:
        assert err.error_type == ErrorType.INVALID_INPUT
        return
    fields = fields_of(tool_named(tool))
    renamed = {key for key in args if key not in fixed}
    assert all(key not in fields for key in renamed)  # only names the tool lacks are ever read as others


def test_through_the_executor_the_slip_runs_and_the_note_says_so(workspace: Path) -> None:
    with Rig(workspace, {}) as rig:
        written = rig.call_sync("memory_write", {"path": "memory/n.md", "content": "hi"})
        listed = rig.call_sync("list_directory", {"path": "."})
        both = rig.call_sync("write_file", {"path": "a.txt", "file_path": "b.txt", "content": "x"})
    assert not written.is_error and "'path' was read as 'file_path'" in " ".join(written.notes)
    assert not listed.is_error and "memory/" in str(listed.output)
    assert both.is_error and both.error_type == ErrorType.INVALID_INPUT and "send it once" in (both.message or "")
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
