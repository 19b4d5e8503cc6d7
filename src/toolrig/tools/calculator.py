"""Arithmetic for models, which are bad at it: an expression language with no way out of it.

Trust model: the expression is hostile, and the process is shared (an MCP server's other clients, an
agent's other calls). It is parsed, its syntax tree checked (numbers, names, calls and operators only;
bounded depth and length), then evaluated node by node here. Every operation's cost is bounded *before*
it runs (result size of ``**``, ``*``, ``<<``, ``round`` digits), because a big-int operation holds the
GIL and no timeout can interrupt it; and the whole evaluation has a CPU budget checked between
operations. Integers stay under Python's 4,300-digit text conversion limit, so every answer serialises;
results that are not finite numbers are refused rather than sent as JSON ``null``.
"""

from __future__ import annotations

import ast
import math
import operator
import time
from collections.abc import Callable
from typing import Any

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError

MAX_EXPRESSION_CHARS = 1_000
MAX_DEPTH = 40
# 13,000 bits is about 3,900 decimal digits: under Python's 4,300-digit int/str conversion limit, and small
# enough that one multiplication or division of two such numbers takes microseconds.
MAX_RESULT_BITS = 13_000
MAX_ROUND_DIGITS = 4_000
CPU_BUDGET_SECONDS = 0.05  # thread CPU time for one evaluation, checked between operations

Number = int | float | bool

_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Call, ast.BinOp, ast.UnaryOp, ast.BoolOp,
    ast.Compare, ast.IfExp, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)  # fmt: skip


def _too_large() -> ToolError:
    return ToolError(
        ErrorType.INVALID_INPUT,
        "The result would be too large to compute.",
        f"Keep integers under about {MAX_RESULT_BITS:,} bits (~3,900 digits); use floats (e.g. 2.0 ** 1000) "
        "for estimates.",
    )


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _ints(a: Any, b: Any) -> bool:
    return isinstance(a, int) and isinstance(b, int)


def _multiply(a: Any, b: Any) -> Any:
    if _ints(a, b) and _bits(a) + _bits(b) > MAX_RESULT_BITS + 1:
        raise _too_large()
    return a * b


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(exponent, int) and abs(exponent) > MAX_RESULT_BITS:
        if not (isinstance(base, int) and abs(base) <= 1):
            raise _too_large()
        # 0, 1 and -1 to any power: CPython would still walk every bit of the exponent.
        exponent = exponent % 2 + (2 if exponent > 0 else -2)
    if _ints(base, exponent) and exponent > 0 and abs(base) > 1 and exponent * (_bits(base) - 1) > MAX_RESULT_BITS:
        raise _too_large()
    return base**exponent


def _shift_left(a: Any, b: Any) -> Any:
    if _ints(a, b) and a and b > 0 and _bits(a) + b > MAX_RESULT_BITS:
        raise _too_large()
    return a << b


def _round(value: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int):
        raise ToolError(ErrorType.INVALID_INPUT, "round's second argument must be a whole number of digits.")
    if abs(ndigits) > MAX_ROUND_DIGITS:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"round's digits must be between -{MAX_ROUND_DIGITS:,} and {MAX_ROUND_DIGITS:,}.",
        )
    return round(value, ndigits)


BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: _multiply, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power, ast.LShift: _shift_left,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}  # fmt: skip
UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert,
}  # fmt: skip
COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}  # fmt: skip
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs, "round": _round, "min": min, "max": max, "sqrt": math.sqrt, "sin": math.sin,
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


class _Evaluation:
    """One walk of a checked tree, with the CPU budget checked at every node."""

    def __init__(self) -> None:
        self.deadline = time.thread_time() + CPU_BUDGET_SECONDS

    def value(self, node: ast.AST) -> Any:
        if time.thread_time() > self.deadline:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                "The expression takes too long to compute.",
                "Split it into smaller calculations.",
            )
        result = self._value(node)
        if isinstance(result, int) and _bits(result) > MAX_RESULT_BITS:
            raise _too_large()
        if isinstance(result, complex):
            raise ToolError(ErrorType.INVALID_INPUT, "The result is a complex number; only real numbers are supported.")
        return result

    def _value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in NAMES:
                raise ToolError(
                    ErrorType.INVALID_INPUT,
                    f"The expression cannot be evaluated: '{node.id}' is not defined.",
                    "Use the constants pi and e, and numbers.",
                )
            return NAMES[node.id]
        if isinstance(node, ast.BinOp):
            return _operator(BINARY, node.op)(self.value(node.left), self.value(node.right))
        if isinstance(node, ast.UnaryOp):
            return _operator(UNARY, node.op)(self.value(node.operand))
        if isinstance(node, ast.BoolOp):
            result: Any = None
            for operand in node.values:
                result = self.value(operand)
                if isinstance(node.op, ast.And) != bool(result):
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.value(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.value(comparator)
                if not _operator(COMPARE, op)(left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if self.value(node.test) else self.value(node.orelse)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise ToolError(ErrorType.INVALID_INPUT, f"'{type(node).__name__}' is not allowed in an expression.")

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name is None or name not in FUNCTIONS:
            shown = name or type(node.func).__name__
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The expression cannot be evaluated: '{shown}' is not a function it can call.",
                "Use abs, round, min, max, sqrt, sin, cos, tan, log or log10.",
            )
        if node.keywords:
            raise ToolError(ErrorType.INVALID_INPUT, "Functions take positional arguments only.")
        return FUNCTIONS[name](*(self.value(argument) for argument in node.args))


_SYMBOLS = {"MatMult": "@", "FloorDiv": "//", "BitAnd": "&", "BitOr": "|", "BitXor": "^", "Invert": "~"}


def _operator(table: dict[Any, Any], op: ast.AST) -> Any:
    """The function for an operator the calculator supports; any other (``@``, ``is``, ``in``...) is refused."""
    function = table.get(type(op))
    if function is None:
        name = type(op).__name__
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The operator {_SYMBOLS.get(name, name)!r} is not supported.",
            "Use + - * / // % ** and comparisons.",
        )
    return function


def evaluate(expression: str) -> float | int | bool:
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression is longer than {MAX_EXPRESSION_CHARS} characters.")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        detail = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression is not valid: {detail}.") from None
    _check_tree(tree)
    if isinstance(tree.body, ast.Name) and tree.body.id in FUNCTIONS:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            "The expression names a function without calling it.",
            "Call it with arguments, e.g. tan(0.5).",
        )
    try:
        result = _Evaluation().value(tree.body)
    except ToolError:
        raise
    except ZeroDivisionError:
        raise ToolError(ErrorType.INVALID_INPUT, "Division by zero.") from None
    except (ValueError, OverflowError, TypeError, ArithmeticError, MemoryError, RecursionError) as exc:
        raise ToolError(ErrorType.INVALID_INPUT, f"The expression cannot be evaluated: {exc}.") from None
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The result is {'not a number' if math.isnan(result) else 'infinite'} ({result}).",
            "A float overflowed or an operation is undefined; use smaller numbers or exact integers.",
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
