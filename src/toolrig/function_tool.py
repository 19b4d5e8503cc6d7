"""``@tool``: a tool made from a typed function, its input model built from the signature and docstring.

Calling the tool calls the function; a plain value it returns (a number, text, a list) is wrapped as the
tool's output (``toolrig.schema_tools``'s native results).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from toolrig.context import ToolContext
from toolrig.definition import Tool, _check_definition, model_name, never_suspends, subject_reader
from toolrig.errors import DefinitionError
from toolrig.schema_tools import (
    _PLAIN_VALUES,
    _SELF_VALIDATING,
    SchemaOutput,
    _from_native,
    _is_native_result,
    _looks_native,
)


class FunctionTool(Tool[BaseModel, BaseModel]):
    """A tool made by ``@tool`` from a typed function; calling it calls the function."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        group: str = "custom",
        read_only: bool = False,
        destructive: bool = False,
        open_world: bool = False,
        terminal: bool = False,
        sequential: bool = False,
        timeout_seconds: float | None = None,
        blocking: bool = True,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        own_execute = type(self).execute is FunctionTool.execute  # a subclass's own execute may do anything
        summary, param_docs = _parse_docstring(inspect.getdoc(fn) or "")
        self.description = description or summary
        self.group = group
        self.read_only = read_only
        self.destructive = destructive
        self.open_world = open_world
        self.terminal = terminal
        self.sequential = sequential
        self.timeout_seconds = timeout_seconds
        self.is_async = inspect.iscoroutinefunction(fn)
        # execute() adds one await of fn's coroutine, which suspends only if fn's own code does.
        self.never_suspends = self.is_async and own_execute and never_suspends(fn)
        self.blocking = blocking
        self.input_model, self._ctx_param = _input_model_from(fn, self.name, param_docs)
        self.reads_context = self._ctx_param is not None or not own_execute
        # Read once: pydantic's ``model_fields`` is a computed property, too slow to ask on every call.
        self._arg_names = tuple(self.input_model.model_fields)
        kind, self._subject_reader = subject_reader(self.input_model)
        if kind is not None:
            self.subject_kind = kind
        returns = _type_hints(fn, self.name).get("return")
        self._native = _is_native_result(returns)
        if self._native:
            self.output_model, self._wraps_result = SchemaOutput, False
        else:
            self.output_model, self._wraps_result = _output_model_from(fn, self.name)
        # The executor may call ``fn`` on the validated input's fields and wrap its value itself (``wrap``),
        # skipping ``execute`` and its coroutine: only when execute is this class's own and takes no context.
        self.calls_fn_directly = own_execute and self._ctx_param is None
        # A return declared as exactly int, float, str or bool: a value of exactly that type is already its
        # own validated JSON form (validating and dumping ``{"result": value}`` gives the same value back), so
        # the executor's output is ``{"result": value}`` without the output model built and thrown away.
        self.plain_result: type | None = (
            returns if self._wraps_result and any(returns is t for t in _SELF_VALIDATING) else None
        )
        _check_definition(self)

    def execute(self, input: BaseModel, ctx: ToolContext) -> BaseModel | Awaitable[BaseModel]:
        if type(input) is self.input_model and not self._ctx_param:
            # The executor's validated input: its fields are exactly the parameters (extra="forbid").
            kwargs = input.__dict__
        else:
            kwargs = {name: getattr(input, name) for name in self._arg_names}
            if self._ctx_param:
                kwargs[self._ctx_param] = ctx
        if self.is_async:
            return self._finish_async(self.fn(**kwargs))
        return self.wrap(self.fn(**kwargs))

    async def _finish_async(self, pending: Awaitable[Any]) -> BaseModel:
        return self.wrap(await pending)

    def wrap(self, value: Any) -> BaseModel:
        """The output model for what ``fn`` returned (a native failure raises its ToolError)."""
        if self._native or (type(value) not in _PLAIN_VALUES and _looks_native(value)):
            return _from_native(value)
        if self._wraps_result:
            # ``output_model(result=value)``: its validator straight, as pydantic's ``__init__`` calls it.
            return self.output_model.__pydantic_validator__.validate_python({"result": value})  # type: ignore[no-any-return]
        if isinstance(value, self.output_model):
            return value
        if value is None and not self.output_model.model_fields:
            return self.output_model()  # a function declared ``-> None``: an empty output, not a failure
        return self.output_model.model_validate(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    group: str = "custom",
    read_only: bool = False,
    destructive: bool = False,
    open_world: bool = False,
    terminal: bool = False,
    sequential: bool = False,
    timeout_seconds: float | None = None,
    blocking: bool = True,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None, /, **options: Any
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function into a tool.

    Parameters become the input model (``Annotated[int, Field(description=...)]`` or a Google-style
    ``Args:`` section give per-parameter text); a parameter typed ``ToolContext`` receives the context.
    A return type that is a pydantic model is the output; anything else is wrapped as ``{"result": ...}``.
    A sync function declared ``blocking=False`` (it never waits on I/O and its CPU is bounded) runs on the
    event loop instead of a worker thread.
    """
    if fn is not None:
        return FunctionTool(fn, **options)

    def decorate(func: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(func, **options)

    return decorate


def _type_hints(fn: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    try:
        return get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise DefinitionError(
            f"tool {tool_name!r}: cannot resolve an annotation ({exc}); "
            "types used in a tool's signature must be importable at module level"
        ) from None


def _input_model_from(
    fn: Callable[..., Any], tool_name: str, param_docs: dict[str, str]
) -> tuple[type[BaseModel], str | None]:
    hints = _type_hints(fn, tool_name)
    fields: dict[str, Any] = {}
    ctx_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise DefinitionError(f"tool {tool_name!r}: *args and **kwargs cannot become a schema; name each input")
        annotation = hints.get(param.name, inspect.Parameter.empty)
        if annotation is ToolContext:
            ctx_param = param.name
            continue
        if annotation is inspect.Parameter.empty:
            raise DefinitionError(f"tool {tool_name!r}: parameter {param.name!r} needs a type annotation")
        default: Any = ... if param.default is inspect.Parameter.empty else param.default
        doc = param_docs.get(param.name)
        if doc and not _has_description(annotation):
            annotation = Annotated[annotation, Field(description=doc)]
        fields[param.name] = (annotation, default)
    config = ConfigDict(extra="forbid")
    model: type[BaseModel] = create_model(model_name(tool_name, "Input"), __config__=config, **fields)
    return model, ctx_param


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return any(isinstance(meta, FieldInfo) and meta.description for meta in get_args(annotation)[1:])
    return False


def _output_model_from(fn: Callable[..., Any], tool_name: str) -> tuple[type[BaseModel], bool]:
    returns = _type_hints(fn, tool_name).get("return", Any)
    if returns is None or returns is type(None):
        return create_model(model_name(tool_name, "Output")), False
    if isinstance(returns, type) and issubclass(returns, BaseModel):
        return returns, False
    wrapped: type[BaseModel] = create_model(model_name(tool_name, "Output"), result=(returns, ...))
    return wrapped, True


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_PARAM_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into the model-facing summary and per-parameter text."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        header = _SECTION.match(line.strip())
        if header and not line.startswith(" "):
            section, current = header.group(1), None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            match = _PARAM_LINE.match(line)
            if match:
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params
