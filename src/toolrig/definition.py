"""The tool definition: written once, read by every adapter (Anthropic, OpenAI, MCP, CLI) and by tests.

Two spellings make the same thing. The built-in catalog uses the class form, whose generic parameters
are the input and output models::

    class Calculate(Tool[CalculateInput, CalculateOutput]):
        name = "calculate"
        group = "calculator"
        description = "Evaluate an arithmetic expression."
        read_only = True

        def execute(self, input: CalculateInput, ctx: ToolContext) -> CalculateOutput: ...

Users who would rather write a function get ``@tool``, which builds the input model from the signature.
"""

from __future__ import annotations

import dis  # already loaded by inspect
import inspect
import json
import re
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, Self, TypeVar, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model, model_validator
from pydantic.fields import FieldInfo

from toolrig.content import ContentPart
from toolrig.context import ToolContext
from toolrig.errors import DefinitionError, ErrorType, ToolError
from toolrig.schema import model_schema, output_schema

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
GROUP_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")

SUBJECT_KINDS = (None, "command", "path", "url", "recipient", "text")


@dataclass(frozen=True, slots=True)
class Subject:
    """Marks an input field as what the call acts on: ``Annotated[str, Subject("path")]``.

    Policy rules, approval patterns, ``policy explain``, the audit log and hints all read a call's subjects
    from these marks, so a new tool is governed the moment it declares them; nothing elsewhere names tools.
    ``kind`` says how a subject is read: ``"path"`` (resolved against the workspace), ``"url"``,
    ``"command"`` (a shell command line), ``"recipient"`` (an email address) or ``"text"`` (a query, a key,
    a collection: matched as written). ``missing`` stands in for a field left unset (a search's ``cwd``
    defaults to the workspace root, and a deny on the root must see it). The mark works on ``str``,
    ``str | None``, ``list[str]`` and on fields of nested models (or lists of them).
    """

    kind: str
    missing: str | None = None


SubjectReader = Callable[[BaseModel], list[str]]

InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound=BaseModel)


def validate_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise DefinitionError(
            f"tool name {name!r} is invalid: use 1-64 characters from a-z, A-Z, 0-9, '_' and '-' "
            "(the rule every provider and MCP client accepts)"
        )
    return name


class ToolInput(BaseModel):
    """Base for input models: unknown keys are an error, so a misspelt argument never passes silently."""

    model_config = ConfigDict(extra="forbid")


class ToolOutput(BaseModel):
    """Base for output models.

    ``attach_content`` adds parts a JSON output cannot carry well (an image read from disk); the executor
    moves them onto the ToolResult and each adapter converts them for its consumer.
    """

    # A plain immutable default: with ``default_factory=list`` pydantic inspects ``list``'s signature on every
    # construction (~0.4 ms per tool output).
    _content: tuple[ContentPart, ...] = PrivateAttr(default=())

    def attach_content(self, *parts: ContentPart) -> Self:
        self._content = (*self._content, *parts)
        return self

    def attached_content(self) -> list[ContentPart]:
        return list(self._content)


class Tool(Generic[InT, OutT]):
    """Base of every tool. Subclass with ``Tool[Input, Output]`` and set the attributes below.

    ``read_only`` marks a tool that changes nothing (smart approvals let it run); ``destructive`` and
    ``open_world`` feed MCP's hints; ``terminal`` ends an agent loop with the tool's output; ``sequential``
    makes the agent loop run the call alone rather than alongside its siblings. ``display_name`` is how
    people see a tool whose provider-safe ``name`` is mangled (an MCP server's ``github/create_issue`` is
    registered as ``github__create_issue``); the registry finds a tool by either, and allow/deny match both.

    A tool's subjects (what policy matches rules against) come from its input model's ``Subject`` marks;
    ``subject_kind`` is read from them too. A tool whose subjects are computed (apply_patch's paths come
    from the patch text) overrides ``subjects()`` and sets ``subject_kind`` itself.
    """

    name: str
    description: str
    display_name: str | None = None
    group: str = "custom"
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    config_model: type[BaseModel] | None = None
    terminal: bool = False
    read_only: bool = False
    destructive: bool = False
    open_world: bool = False
    sequential: bool = False
    subject_kind: str | None = None
    timeout_seconds: float | None = None
    is_async: bool = False
    # A sync execute that never blocks (no I/O, no waiting, bounded CPU) runs on the event loop itself,
    # skipping the hop to a worker thread; a timeout cannot interrupt it there.
    blocking: bool = True
    # An async execute with no suspension point in its code (read from the bytecode, never declared): it
    # runs to its end in one step, so no timeout could interrupt it and the executor opens no timeout scope.
    never_suspends: bool = False
    # False only where execute provably never reads its ctx (a @tool function without a ToolContext
    # parameter): the executor then builds none for the call.
    reads_context: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        models = _generic_models(cls)
        if models is not None:
            cls.input_model, cls.output_model = models
        cls.is_async = inspect.iscoroutinefunction(cls.execute)
        cls.never_suspends = cls.is_async and never_suspends(cls.execute)
        if "input_model" in cls.__dict__ or models is not None:
            kind, reader = subject_reader(cls.input_model)
            cls._subject_reader = staticmethod(reader) if reader is not None else None
            if "subject_kind" not in cls.__dict__ and kind is not None:
                cls.subject_kind = kind
        if "name" in cls.__dict__:
            _check_definition(cls)

    def execute(self, input: InT, ctx: ToolContext) -> OutT | Awaitable[OutT]:
        """Do the work. Raise ``ToolError`` to fail on purpose; anything else is reported as ``internal``."""
        raise DefinitionError(f"tool {type(self).__name__} does not define execute()")

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the input; tools proxied from elsewhere (MCP) override it with their own."""
        return model_schema(self.input_model)

    def output_schema(self) -> dict[str, Any] | None:
        return output_schema(self.output_model)

    _subject_reader: SubjectReader | None = None

    def subjects(self, input: InT) -> list[str]:
        """What the call acts on (a command, paths, a URL): the values of the input's ``Subject`` fields."""
        reader = self._subject_reader
        return reader(input) if reader is not None else []

    @property
    def has_subjects(self) -> bool:
        """Whether ``subjects()`` can find any: a ``Subject`` mark on the input, or a ``subjects`` of its own."""
        return self._subject_reader is not None or type(self).subjects is not Tool.subjects

    def refusal(self, input: InT, settings: Any) -> tuple[str, str] | None:
        """(the setting that refuses, why) when the tool's own settings refuse this call outright.

        Asked by the gate before approvals and hooks, so ``policy explain`` and the audit row name the
        setting (``tool_config.run_command.deny``) rather than the approval mode. ``settings`` is the
        tool's ``config_model`` instance, or None outside a Rig.
        """
        return None

    def __repr__(self) -> str:
        return f"<tool {self.name!r} group={self.group!r}>"


def _generic_models(cls: type) -> tuple[type[BaseModel], type[BaseModel]] | None:
    for base in getattr(cls, "__orig_bases__", ()):
        origin = get_origin(base)
        if isinstance(origin, type) and issubclass(origin, Tool):
            args = get_args(base)
            if len(args) == 2 and all(isinstance(a, type) and issubclass(a, BaseModel) for a in args):
                return args[0], args[1]
    return None


def _subject_mark(info: FieldInfo) -> Subject | None:
    return next((meta for meta in info.metadata if isinstance(meta, Subject)), None)


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the item type, whether it is a list), with ``X | None`` reduced to ``X``."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    if origin in (list, tuple, set, frozenset):
        items = get_args(annotation)
        return (items[0] if items else Any), True
    return annotation, False


def subject_reader(model: type[BaseModel], _depth: int = 0) -> tuple[str | None, SubjectReader | None]:
    """Read a model's ``Subject`` marks once into (kind, a function from an input to its subjects)."""
    steps: list[Callable[[BaseModel, list[str]], None]] = []
    kinds: set[str] = set()
    for name, info in model.model_fields.items():
        mark = _subject_mark(info)
        item, many = _unwrap(info.annotation)
        if mark is not None:
            kinds.add(mark.kind)
            steps.append(_field_step(name, many, mark.missing))
        elif _depth < 4 and isinstance(item, type) and issubclass(item, BaseModel):
            kind, inner = subject_reader(item, _depth + 1)
            if kind is not None and inner is not None:
                kinds.add(kind)
                steps.append(_nested_step(name, many, inner))
    if len(kinds) > 1:
        raise DefinitionError(f"{model.__name__}: Subject fields of one tool must share one kind, not {sorted(kinds)}")
    if not steps:
        return None, None

    def read(value: BaseModel) -> list[str]:
        out: list[str] = []
        for step in steps:
            step(value, out)
        return out

    return kinds.pop(), read


def _field_step(name: str, many: bool, missing: str | None) -> Callable[[BaseModel, list[str]], None]:
    def step(value: BaseModel, out: list[str]) -> None:
        found = getattr(value, name, None)
        if found is None or (many and not found):
            if missing is not None:
                out.append(missing)
        elif many:
            out.extend(str(item) for item in found)
        else:
            out.append(str(found))

    return step


def _nested_step(name: str, many: bool, inner: SubjectReader) -> Callable[[BaseModel, list[str]], None]:
    def step(value: BaseModel, out: list[str]) -> None:
        found = getattr(value, name, None)
        for item in (found or ()) if many else ((found,) if found is not None else ()):
            if isinstance(item, BaseModel):
                out.extend(inner(item))

    return step


# Every way a coroutine can give the event loop control (await, async with, async for) compiles to these.
_SUSPENDING_OPS = frozenset(
    dis.opmap[name]
    for name in ("YIELD_VALUE", "SEND", "GET_AWAITABLE", "BEFORE_ASYNC_WITH", "GET_AITER", "GET_ANEXT", "END_ASYNC_FOR")
    if name in dis.opmap
)


def never_suspends(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` is an ``async def`` whose own code cannot suspend: one step runs it to its end.

    Anything that is not plainly such a function (a partial, a decorated wrapper returning another
    coroutine, a callable object) is treated as one that may suspend.
    """
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or not code.co_flags & inspect.CO_COROUTINE:
        return False
    # Wordcode: every instruction (and inline cache entry, opcode 0) starts at an even offset.
    return _SUSPENDING_OPS.isdisjoint(code.co_code[0::2])


def _check_definition(tool: Tool[Any, Any] | type[Tool[Any, Any]]) -> None:
    validate_name(tool.name)
    label = f"tool {tool.name!r}"
    if not isinstance(getattr(tool, "description", None), str) or not tool.description.strip():
        raise DefinitionError(f"{label} needs a description: it is what the model reads to choose the tool")
    if not GROUP_PATTERN.match(tool.group):
        raise DefinitionError(f"{label}: group {tool.group!r} must be lowercase letters, digits and '_'")
    timeout = getattr(tool, "timeout_seconds", None)
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):  # NaN, 0, -1: no deadline
        raise DefinitionError(f"{label}: timeout_seconds must be a positive number of seconds, not {timeout!r}")
    for attr in ("input_model", "output_model"):
        model = getattr(tool, attr, None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise DefinitionError(f"{label}: {attr} must be a pydantic model (subclass Tool[Input, Output])")
    if tool.subject_kind not in SUBJECT_KINDS:
        raise DefinitionError(f"{label}: subject_kind must be one of {', '.join(map(repr, SUBJECT_KINDS))}")
    if tool.config_model is not None and not issubclass(tool.config_model, BaseModel):
        raise DefinitionError(f"{label}: config_model must be a pydantic model")


# ---------------------------------------------------------------------------------------------- @tool


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


def _model_name(tool_name: str, suffix: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_-]+", tool_name) if part) + suffix


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
    model: type[BaseModel] = create_model(_model_name(tool_name, "Input"), __config__=config, **fields)
    return model, ctx_param


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return any(isinstance(meta, FieldInfo) and meta.description for meta in get_args(annotation)[1:])
    return False


def _output_model_from(fn: Callable[..., Any], tool_name: str) -> tuple[type[BaseModel], bool]:
    returns = _type_hints(fn, tool_name).get("return", Any)
    if returns is None or returns is type(None):
        return create_model(_model_name(tool_name, "Output")), False
    if isinstance(returns, type) and issubclass(returns, BaseModel):
        return returns, False
    wrapped: type[BaseModel] = create_model(_model_name(tool_name, "Output"), result=(returns, ...))
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


# ---------------------------------------------------------------------------------- results and schemas


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

        model = create_model(_model_name(name, "Arguments"), __base__=SchemaArguments)
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
