"""The tool definition: written once, read by every adapter (Anthropic, OpenAI, MCP, CLI) and by tests.

Two spellings make the same thing. The built-in catalog uses the class form, whose generic parameters
are the input and output models::

    class Calculate(Tool[CalculateInput, CalculateOutput]):
        name = "calculate"
        group = "calculator"
        description = "Evaluate an arithmetic expression."
        read_only = True

        def execute(self, input: CalculateInput, ctx: ToolContext) -> CalculateOutput: ...

Users who would rather write a function get ``@tool`` (``toolrig.function_tool``), which builds the input
model from the signature; schema-first code gets ``schema_tool`` (``toolrig.schema_tools``). Both names are
still found here (a lazy re-export: they import this module, so it cannot import them).
"""

from __future__ import annotations

import dis  # already loaded by inspect
import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, PrivateAttr
from pydantic.fields import FieldInfo

from toolrig.content import ContentPart
from toolrig.context import ToolContext
from toolrig.errors import DefinitionError
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


def model_name(tool_name: str, suffix: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_-]+", tool_name) if part) + suffix


_MOVED = {
    "FunctionTool": "toolrig.function_tool",
    "tool": "toolrig.function_tool",
    "SchemaArguments": "toolrig.schema_tools",
    "SchemaOutput": "toolrig.schema_tools",
    "SchemaTool": "toolrig.schema_tools",
    "schema_tool": "toolrig.schema_tools",
}


def __getattr__(name: str) -> Any:
    """The names that moved to ``toolrig.function_tool`` and ``toolrig.schema_tools``, still importable from here."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)
