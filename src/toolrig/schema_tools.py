"""A tool made from a JSON Schema and a handler (``schema_tool``), and the outputs that need no model of their own.

A schema-first tool's arguments are checked against its own schema, not a pydantic model; its output, and a
``@tool`` function's plain value (a number, text, a list, an MCP-style envelope), is any JSON object.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, create_model, model_validator

from toolrig.context import ToolContext
from toolrig.definition import Tool, _check_definition, model_name
from toolrig.errors import DefinitionError, ErrorType, ToolError


class SchemaOutput(BaseModel):
    """The output of a tool defined by a JSON Schema (or returning a native result): any JSON object."""

    model_config = ConfigDict(extra="allow")


def _is_native_result(annotation: Any) -> bool:
    """A return type shaped like the native design's ``ToolResult(success, data, error)``."""
    if not isinstance(annotation, type):
        return False
    names: set[str] = set(getattr(annotation, "__dataclass_fields__", {}))
    names |= set(getattr(annotation, "model_fields", {}))
    names |= set(getattr(annotation, "__annotations__", {}))
    return {"success", "data", "error"} <= names


# Declared return types whose values of exactly that type validate and dump to themselves (lax mode, JSON mode).
_SELF_VALIDATING = (int, float, str, bool)

# Values that cannot be a native ``ToolResult(success, data, error)``: no attribute lookups for them.
_PLAIN_VALUES = frozenset({int, float, str, bool, bytes, list, dict, tuple, type(None)})


def _looks_native(value: Any) -> bool:
    return (
        not isinstance(value, dict)
        and isinstance(getattr(value, "success", None), bool)
        and hasattr(value, "data")
        and hasattr(value, "error")
    )


def _from_native(value: Any) -> SchemaOutput:
    """A native ``ToolResult(success, data, error)`` as toolrig's output, or its failure as a ToolError.

    A failure is ``invalid_input`` unless the result carries an ``error_type`` toolrig knows.
    """
    fields = value if isinstance(value, dict) else {k: getattr(value, k, None) for k in ("success", "data", "error")}
    success, data, error = fields.get("success"), fields.get("data"), fields.get("error")
    if success is not True:
        try:
            kind = ErrorType(getattr(value, "error_type", None) or ErrorType.INVALID_INPUT)
        except ValueError:
            kind = ErrorType.INVALID_INPUT
        raise ToolError(kind, str(error or "The tool reported a failure without saying why."))
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    return SchemaOutput.model_validate(data if isinstance(data, dict) else {"result": data})


class SchemaArguments(BaseModel):
    """Arguments checked against a JSON Schema (the tool's own), not a pydantic model; a subclass per tool."""

    model_config = ConfigDict(extra="allow")
    checker: ClassVar[Callable[[dict[str, Any]], list[str]] | None] = None

    @model_validator(mode="before")
    @classmethod
    def _check_against_schema(cls, data: Any) -> Any:
        from toolrig.errors import ErrorType, ToolError

        problems = cls.checker(data) if cls.checker is not None and isinstance(data, dict) else []
        if problems:
            # ToolError passes through pydantic untouched: the executor reports it as it is.
            plural = "s" if len(problems) != 1 else ""
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"{len(problems)} invalid argument{plural}:\n" + "\n".join(problems),
                "Fix the arguments above to match the tool's schema and call again.",
            )
        return data


class SchemaTool(Tool[SchemaArguments, SchemaOutput]):
    """A tool made from a JSON Schema and a handler (Codebuff's custom tool definitions, any schema-first code).

    The handler gets the arguments as a dict (and the ``ToolContext`` if it takes a second parameter), sync
    or async, and returns a dict (the output), any other JSON value (``{"result": value}``) or a native
    ``ToolResult(success, data, error)``. Arguments are checked against the schema before the handler runs.
    """

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        handler: Callable[..., Any],
        *,
        output_schema: dict[str, Any] | None = None,
        group: str = "custom",
        read_only: bool = False,
        destructive: bool = False,
        open_world: bool = False,
        terminal: bool = False,
        sequential: bool = False,
        timeout_seconds: float | None = None,
    ) -> None:
        from toolrig.schema import schema_checker

        if not isinstance(input_schema, dict) or input_schema.get("type", "object") != "object":
            raise DefinitionError(f"tool {name!r}: input_schema must be a JSON Schema object ({{'type': 'object'}})")
        checker = schema_checker(input_schema)
        if checker is None:
            raise DefinitionError(f"tool {name!r}: input_schema is not a valid JSON Schema")
        self.name = name
        self.description = description
        self.group = group
        self.read_only, self.destructive, self.open_world = read_only, destructive, open_world
        self.terminal, self.sequential, self.timeout_seconds = terminal, sequential, timeout_seconds
        self.handler = handler
        self.is_async = inspect.iscoroutinefunction(handler)
        self._takes_ctx = _positional_count(handler) >= 2
        self._schema = {"properties": {}, **input_schema, "type": "object"}
        self._output_schema = output_schema

        model = create_model(model_name(name, "Arguments"), __base__=SchemaArguments)
        model.checker = checker
        self.input_model = model
        self.output_model = SchemaOutput
        _check_definition(self)

    def input_schema(self) -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(json.dumps(self._schema))
        return copied

    def output_schema(self) -> dict[str, Any] | None:
        return json.loads(json.dumps(self._output_schema)) if self._output_schema is not None else None

    def execute(self, input: SchemaArguments, ctx: ToolContext) -> SchemaOutput | Awaitable[SchemaOutput]:
        args = dict(input.model_extra or {})
        value = self.handler(args, ctx) if self._takes_ctx else self.handler(args)
        if self.is_async:
            return self._finish(value)
        return _as_output(value)

    async def _finish(self, pending: Awaitable[Any]) -> SchemaOutput:
        return _as_output(await pending)


def schema_tool(
    name: str, description: str, input_schema: dict[str, Any], handler: Callable[..., Any], **options: Any
) -> SchemaTool:
    """A tool from a JSON Schema and a handler; see ``SchemaTool``."""
    return SchemaTool(name, description, input_schema, handler, **options)


def _as_output(value: Any) -> SchemaOutput:
    if _looks_native(value) or (isinstance(value, dict) and set(value) == {"success", "data", "error"}):
        return _from_native(value)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return SchemaOutput.model_validate(value if isinstance(value, dict) else {"result": value})


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)
