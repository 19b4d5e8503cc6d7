from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from toolrig.errors import ErrorType, ToolError
from toolrig.result import ResultMeta, ToolResult


def test_success_serialises_to_exactly_is_error_and_output() -> None:
    result = ToolResult.ok({"a": 1}, meta=ResultMeta(tool="t", duration_ms=3.0))
    assert result.model_dump(mode="json") == {"is_error": False, "output": {"a": 1}}
    assert json.loads(result.to_json()) == {"is_error": False, "output": {"a": 1}}


def test_error_serialises_to_exactly_the_four_error_keys() -> None:
    result = ToolResult.error(ErrorType.DENIED, "no", "ask the user", retryable=True)
    assert result.model_dump(mode="json") == {
        "is_error": True,
        "error_type": "denied",
        "message": "no",
        "next_action_hint": "ask the user",
    }
    assert result.retryable  # kept for programs, not serialised


def test_notes_appear_only_when_there_are_some() -> None:
    result = ToolResult.ok({}, notes=["repaired"])
    assert result.model_dump(mode="json") == {"is_error": False, "output": {}, "notes": ["repaired"]}


def test_every_error_type_has_a_default_hint() -> None:
    for kind in ErrorType:
        assert ToolResult.error(kind, "m").next_action_hint


def test_raise_for_error_returns_output_or_raises_the_carried_error() -> None:
    assert ToolResult.ok({"x": 1}).raise_for_error() == {"x": 1}
    failed = ToolResult.error("timeout", "slow")
    try:
        failed.raise_for_error()
    except ToolError as exc:
        assert exc.error_type is ErrorType.TIMEOUT and exc.retryable
    else:
        raise AssertionError("expected a ToolError")


def test_error_codes_are_stable() -> None:
    assert {e.value for e in ErrorType} >= {
        "invalid_input", "not_found", "conflict", "denied", "timeout", "too_large", "rate_limited", "internal",
    }  # fmt: skip


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(output=st.dictionaries(st.text(max_size=5), _json, max_size=4), notes=st.lists(st.text(max_size=10), max_size=2))
def test_the_executors_unvalidated_ok_is_the_same_result_as_ok(output: dict[str, Any], notes: list[str]) -> None:
    meta = ResultMeta(tool="t", output_bytes=3)
    checked = ToolResult.ok(output, notes=notes, meta=meta)
    trusted = ToolResult.ok_checked_already(output, list(notes), meta, [])
    assert trusted == checked
    assert repr(trusted) == repr(checked)
    assert trusted.model_fields_set == checked.model_fields_set
    assert trusted.model_dump(mode="json") == checked.model_dump(mode="json")
    assert trusted.to_json() == checked.to_json()
    assert trusted.model_copy(update={"notes": ["x"]}).notes == ["x"]
    # The set of fields is shared by every such result: a copy's update must leave it as it was.
    assert ToolResult.ok_checked_already({}, [], meta, []).model_fields_set == checked.model_fields_set
    with pytest.raises(ValidationError):
        trusted.is_error = True  # type: ignore[misc]  # still frozen


def test_the_unvalidated_ok_fills_every_field_the_model_has() -> None:
    """A field added to ToolResult must be added to what the executor's shortcut fills, or this fails."""
    trusted = ToolResult.ok_checked_already({}, [], ResultMeta(), [])
    assert set(trusted.__dict__) == set(ToolResult.model_fields)
    assert list(trusted.__dict__) == list(ToolResult.model_fields)
