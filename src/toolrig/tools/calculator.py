"""Arithmetic for models, which are bad at it: an expression language with no way out of it.

Trust model: the expression is hostile. It is parsed, its syntax tree checked (numbers, names, calls and
operators only; bounded depth and length) and evaluated by simpleeval with operators that refuse results
too large to compute quickly.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError

MAX_EXPRESSION_CHARS = 1_000
MAX_DEPTH = 40
MAX_RESULT_BITS = 100_000

_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Call, ast.BinOp, ast.UnaryOp, ast.BoolOp,
    ast.Compare, ast.IfExp, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)  # fmt: skip


def _too_large() -> ToolError:
    return ToolError(
        ErrorType.INVALID_INPUT,
        "The result would be too large to compute.",
        f"Keep integers under about {MAX_RESULT_BITS:,} bits; use floats (e.g. 2.0 ** 1000) for estimates.",
    )


def _bounded(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        result = op(a, b)
        if isinstance(result, int) and result.bit_length() > MAX_RESULT_BITS:
            raise _too_large()
        return result

    return apply


def _power(base: Any, exponent: Any) -> Any:
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and abs(base) > 1
        and exponent > 0
        and exponent * max(abs(base).bit_length() - 1, 1) > MAX_RESULT_BITS
    ):
        raise _too_large()
    if isinstance(exponent, int) and abs(exponent) > MAX_RESULT_BITS:
        raise _too_large()
    return base**exponent


def _shift(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b > MAX_RESULT_BITS:
        raise _too_large()
    return a << b


OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: _bounded(operator.add), ast.Sub: _bounded(operator.sub), ast.Mult: _bounded(operator.mul),
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
    ast.LShift: _shift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
    ast.Invert: operator.invert, ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}  # fmt: skip
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs, "round": round, "min": min, "max": max, "sqrt": math.sqrt, "sin": math.sin,
    "cos": math.cos, "tan": math.tan, "log": math.log, "log10": math.log10,
}  # fmt: skip
NAMES: dict[str, Any] = {"pi": math.pi, "e": math.e, "True": True, "False": False}


def _check_tree(tree: ast.AST) -> None:
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ToolError(ErrorType.INVALID_INPUT, f"The expression nests deeper than {MAX_DEPTH} levels.")
        if not isinstance(node, _ALLOWED_NODES):
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"'{type(node).__name__}' is not allowed in an expression.",
                "Use numbers, + - * / // % **, comparisons, and the listed functions and constants.",
            )
        if isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            raise ToolError(ErrorType.INVALID_INPUT, "Only numbers are allowed as literals (no strings).")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def evaluate(expression: str) -> float | int | bool:
    from simpleeval import InvalidExpression, SimpleEval

    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression is longer than {MAX_EXPRESSION_CHARS} characters.")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        detail = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression is not valid: {detail}.") from None
    _check_tree(tree)
    evaluator = SimpleEval(operators=OPERATORS, functions=FUNCTIONS, names=NAMES)
    try:
        result = evaluator.eval(expression.strip(), previously_parsed=tree.body)
    except ToolError:
        raise
    except ZeroDivisionError:
        raise ToolError(ErrorType.INVALID_INPUT, "Division by zero.") from None
    except (ValueError, OverflowError, TypeError, ArithmeticError) as exc:
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression cannot be evaluated: {exc}.") from None
    except InvalidExpression as exc:  # unknown name or function, and simpleeval's own limits
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression cannot be evaluated: {exc}") from None
    if callable(result):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            "The expression names a function without calling it.",
            "Call it with arguments, e.g. tan(0.5).",
        )
    return result  # type: ignore[no-any-return]


class CalculateInput(ToolInput):
    expression: str = Field(
        description="A Python-style arithmetic expression, e.g. 'sqrt(16) + pi' or '2 ** 10 > 1000'.",
    )


class CalculateOutput(ToolOutput):
    result: bool | int | float = Field(description="The value of the expression.")


class Calculate(Tool[CalculateInput, CalculateOutput]):
    name = "calculate"
    group = "calculator"
    read_only = True
    description = (
        "Evaluate an arithmetic expression exactly instead of doing the arithmetic yourself. "
        "Supports + - * / // % **, comparisons (< <= == != >= >), and/or/not, "
        "abs, round, min, max, sqrt, sin, cos, tan, log, log10 and the constants pi and e."
    )

    def execute(self, input: CalculateInput, ctx: ToolContext) -> CalculateOutput:
        return CalculateOutput(result=evaluate(input.expression))


TOOLS = [Calculate()]
