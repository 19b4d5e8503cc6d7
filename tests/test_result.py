from __future__ import annotations

import json

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
