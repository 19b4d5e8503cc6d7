from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import Rig, ToolContext
from toolrig.errors import ToolError
from toolrig.tools.calculator import Calculate, CalculateInput, evaluate


def calc(rig: Rig, expression: str) -> object:
    result = rig.call_sync("calculate", {"expression": expression})
    return result.output["result"] if not result.is_error else result


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(16) + pi", 4 + math.pi),
        ("abs(-3) + round(2.567, 2)", 3 + 2.57),
        ("min(4, 2, 8) * max(1, 5)", 10),
        ("sin(0) + cos(0) + tan(0)", 1.0),
        ("log(e) + log10(1000)", 4.0),
        ("2 ** 10", 1024),
        ("7 // 2 + 7 % 2", 4),
        ("1 < 2 <= 3", True),
        ("2 == 3 or not False", True),
        ("10 if 3 > 2 else 20", 10),
    ],
)
def test_expressions_evaluate(rig: Rig, expression: str, expected: object) -> None:
    assert calc(rig, expression) == pytest.approx(expected)


def test_the_issue_example_prints_exactly(rig: Rig) -> None:
    assert rig.call_sync("calculate", {"expression": "sqrt(16) + pi"}).to_json() == (
        '{"is_error":false,"output":{"result":7.141592653589793}}'
    )


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("9 ** 9 ** 9", "too large"),
        ("2 ** 10 ** 8", "too large"),
        (
            "(10 ** 4000) * (10 ** 4000) * (10 ** 4000) * (10 ** 4000) * (10 ** 4000) * (10 ** 4000) * (10**4000)"
            " * (10 ** 4000) * (10 ** 4000)",
            "too large",
        ),
        ("1 << 10 ** 9", "too large"),
        ("'a' * 10 ** 9", "no strings"),
        ("1" + " + 1" * 600, "longer than"),
        ("(" * 250 + "1" + ")" * 250, "not valid"),
        ("1 + (" * 45 + "1" + ")" * 45, "nests deeper"),
        ("-" * 60 + "1", "nests deeper"),
        ("__import__('os').system('id')", "allowed"),
        ("[x for x in range(10)]", "not allowed"),
        ("(1).__class__", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("open(1)", "open"),
        ("1 / 0", "Division by zero"),
        ("sqrt(-1)", "math domain error"),
        ("1 +", "not valid"),
        ("", "not valid"),
        ("x + 1", "x"),
        ("tan", "without calling it"),
    ],
)
def test_abuse_and_mistakes_are_invalid_input_with_a_reason(rig: Rig, expression: str, fragment: str) -> None:
    result = rig.call_sync("calculate", {"expression": expression})
    assert result.is_error and result.error_type == "invalid_input", result
    assert fragment in (result.message or ""), result.message


def test_the_tool_can_be_called_directly_in_a_plain_test(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = Calculate().execute(CalculateInput(expression="1 + 1"), ToolContext.for_tests(str(tmp_path)))
    assert out.result == 2


ints = st.integers(-1000, 1000)


@st.composite
def arithmetic(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        return str(draw(ints))
    left = draw(arithmetic(depth + 1))
    right = draw(arithmetic(depth + 1))
    op = draw(st.sampled_from(["+", "-", "*"]))
    return f"({left} {op} {right})"


@settings(max_examples=200, deadline=None)
@given(arithmetic())
def test_integer_arithmetic_matches_python(expression: str) -> None:
    assert evaluate(expression) == eval(expression)  # noqa: S307 - the generated grammar is only ints and + - *


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_never_escapes_as_anything_but_a_tool_error(text: str) -> None:
    try:
        value = evaluate(text)
    except ToolError as exc:
        assert exc.error_type.value == "invalid_input"
    else:
        assert isinstance(value, int | float | bool)
