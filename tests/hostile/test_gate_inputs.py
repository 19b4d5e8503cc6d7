"""Hostile arguments at the gate: text no UTF-8 can carry, absurd nesting, integers past str()'s limit (D6 D13 D15)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.policy.conftest import last_row
from toolrig import Rig
from toolrig.arguments import parse_arguments
from toolrig.errors import ToolError
from toolrig.policy.audit import AuditLog


def test_a_lone_surrogate_is_invalid_input_and_the_call_still_leaves_a_row(workspace: Path) -> None:
    (workspace / "plans.txt").write_text("TOP-SECRET-PLANS\n")
    rig = Rig(workspace, config={})
    for args in ('{"paths": ["plans.txt", "\\ud800"]}', {"paths": ["plans.txt", "\ud800"]}):
        result = rig.call_sync("read_files", args)
        assert result.error_type == "invalid_input" and "surrogate" in (result.message or "")
        assert "TOP-SECRET" not in result.to_json()
        assert last_row(workspace).tool == "read_files"
    log = AuditLog(workspace / ".toolrig")
    try:
        assert log.count() == 2
    finally:
        log.close()


JSON_VALUES = st.recursive(
    st.text(), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
)


@settings(max_examples=50, deadline=None)
@given(JSON_VALUES)
def test_any_json_value_parses_to_arguments_or_a_clear_invalid_input(value: Any) -> None:
    try:
        text = json.dumps({"v": value})
    except ValueError:
        return
    try:
        parse_arguments(text)
    except ToolError as err:
        assert err.error_type == "invalid_input"


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])
def test_arguments_nested_absurdly_deep_are_invalid_input_not_internal(depth: int, workspace: Path) -> None:
    text = '{"a":' * depth + "1" + "}" * depth
    result = Rig(workspace, config={}).call_sync("read_files", text)
    assert result.error_type == "invalid_input" and "nested too deeply" in (result.message or "")


def test_an_integer_past_4300_digits_serialises_through_python_and_the_cli(workspace: Path) -> None:
    from toolrig import tool
    from toolrig.cli import app

    @tool(group="bigint", read_only=True)
    def huge() -> int:
        """An integer past Python's 4,300-digit text limit (the calculator refuses to make one now)."""
        return 2**99999

    result = Rig(workspace, config={}, tools=[huge]).call_sync("huge", {})
    assert not result.is_error
    assert len(result.to_json()) > 30_000
    # The calculator bounds its results (D5); its refusal is an answer that serialises too.
    out = CliRunner().invoke(
        app, ["call", "calculate", "--json", '{"expression": "2**99999"}', "--root", str(workspace)]
    )
    assert out.exit_code == 1, out.output
    assert json.loads(out.stdout)["error_type"] == "invalid_input"
