from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, Field

from toolrig import Rig, Tool, ToolContext, ToolInput, ToolOutput, tool
from toolrig.definition import FunctionTool, Subject, never_suspends
from toolrig.errors import DefinitionError
from toolrig.registry import Registry


class EchoIn(ToolInput):
    text: str


class EchoOut(ToolOutput):
    text: str


def test_class_tool_takes_its_models_from_the_generic_parameters() -> None:
    class Echo(Tool[EchoIn, EchoOut]):
        name = "echo"
        description = "Echo the text."

        def execute(self, input: EchoIn, ctx: ToolContext) -> EchoOut:
            return EchoOut(text=input.text)

    assert Echo.input_model is EchoIn
    assert Echo.output_model is EchoOut
    assert Echo.is_async is False


def test_async_execute_is_detected() -> None:
    class AsyncEcho(Tool[EchoIn, EchoOut]):
        name = "async_echo"
        description = "Echo the text."

        async def execute(self, input: EchoIn, ctx: ToolContext) -> EchoOut:
            return EchoOut(text=input.text)

    assert AsyncEcho.is_async is True


@pytest.mark.parametrize("bad", ["", "has space", "dot.name", "a" * 65, "slash/name", "ünïcode"])
def test_tool_names_outside_the_provider_rule_are_refused(bad: str) -> None:
    with pytest.raises(DefinitionError, match="tool name"):

        class Bad(Tool[EchoIn, EchoOut]):
            name = bad
            description = "x"


@pytest.mark.parametrize("good", ["a", "A-b_c", "x" * 64, "read_files", "9lives"])
def test_tool_names_inside_the_rule_are_accepted(good: str) -> None:
    class Good(Tool[EchoIn, EchoOut]):
        name = good
        description = "x"

    assert Good.name == good


def test_a_tool_without_description_is_refused() -> None:
    with pytest.raises(DefinitionError, match="needs a description"):

        class Mute(Tool[EchoIn, EchoOut]):
            name = "mute"
            description = "  "


def test_a_tool_without_models_is_refused() -> None:
    with pytest.raises(DefinitionError, match="input_model must be a pydantic model"):

        class NoModels(Tool):  # type: ignore[type-arg]
            name = "no_models"
            description = "x"


def test_group_names_are_lowercase_identifiers() -> None:
    with pytest.raises(DefinitionError, match="group"):

        class Grouped(Tool[EchoIn, EchoOut]):
            name = "grouped"
            group = "Bad Group"
            description = "x"


def test_decorator_builds_the_input_model_from_the_signature() -> None:
    @tool(group="text", read_only=True)
    def shout(
        text: Annotated[str, Field(description="What to shout.")],
        times: Annotated[int, Field(ge=1, le=5)] = 1,
        suffix: str = "!",
    ) -> str:
        """Shout the text.

        Args:
            suffix: Appended after each shout.
        """
        return (text.upper() + suffix) * times

    schema = shout.input_schema()
    assert schema["required"] == ["text"]
    assert schema["properties"]["text"]["description"] == "What to shout."
    assert schema["properties"]["times"]["maximum"] == 5
    assert schema["properties"]["suffix"]["description"] == "Appended after each shout."
    assert schema["additionalProperties"] is False
    assert shout.description == "Shout the text."
    assert shout.group == "text" and shout.read_only
    # Calling the tool object calls the function, for plain tests.
    assert shout("hi", 2) == "HI!HI!"


def test_decorated_tools_run_through_the_executor_with_wrapped_results(tmp_path) -> None:  # type: ignore[no-untyped-def]
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def slow_add(a: int, b: int, ctx: ToolContext) -> int:
        """Add, asynchronously, and prove the context arrives."""
        assert ctx.tool_name == "slow_add"
        return a + b

    rig = Rig(tmp_path, registry=Registry([add, slow_add]))
    assert rig.call_sync("add", {"a": 2, "b": 3}).output == {"result": 5}
    assert rig.call_sync("slow_add", {"a": 2, "b": "3"}).output == {"result": 5}
    failed = rig.call_sync("add", {"a": "two", "b": 3})
    assert failed.is_error and failed.error_type == "invalid_input"
    assert "'a'" in (failed.message or "")


class Point(BaseModel):
    x: int
    y: int


def test_decorator_with_a_model_return_type_uses_it_as_output() -> None:
    @tool
    def origin() -> Point:
        """The origin."""
        return Point(x=0, y=0)

    assert origin.output_model is Point
    assert origin.input_schema()["properties"] == {}


def test_decorator_explains_annotations_it_cannot_resolve() -> None:
    class Local(BaseModel):
        x: int

    def make() -> Local:
        """Make one."""
        return Local(x=1)

    with pytest.raises(DefinitionError, match="module level"):
        tool(make)


def test_decorator_refuses_untyped_and_variadic_parameters() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        """Untyped."""

    with pytest.raises(DefinitionError, match="needs a type annotation"):
        tool(untyped)

    def variadic(*items: int) -> int:
        """Variadic."""
        return 0

    with pytest.raises(DefinitionError, match=r"\*args"):
        tool(variadic)


def test_decorator_without_docstring_or_description_is_refused() -> None:
    def bare(x: int) -> int:
        return x

    with pytest.raises(DefinitionError, match="needs a description"):
        tool(bare)
    assert tool(description="Return x.")(bare).description == "Return x."


async def _plain(a: int) -> int:
    """Add one."""
    return a + 1


async def _awaits(a: int) -> int:
    """Give the loop a turn, then answer."""
    await anyio.sleep(0)
    return a


async def _awaits_sometimes(a: int) -> int:
    if a:
        await anyio.sleep(0)
    return a


async def _async_with(a: int) -> int:
    async with anyio.create_task_group():
        return a


async def _async_for(items: list[int]) -> int:
    total = 0
    async for item in _agen(items):
        total += item
    return total


async def _agen(items: list[int]) -> AsyncIterator[int]:
    for item in items:
        yield item


def _wrapped(fn: Callable[..., Awaitable[int]]) -> Callable[..., Awaitable[int]]:
    @functools.wraps(fn)
    def call(*args: Any) -> Awaitable[int]:  # a sync wrapper handing on a coroutine made elsewhere
        return fn(*args)

    return call


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (_plain, True),
        (_awaits, False),
        (_awaits_sometimes, False),
        (_async_with, False),
        (_async_for, False),
        (functools.partial(_plain, 1), False),
        (_wrapped(_awaits), False),
        (lambda a: a, False),
    ],
)
def test_only_an_async_def_without_any_suspension_point_never_suspends(fn: Any, expected: bool) -> None:
    assert never_suspends(fn) is expected


def test_tools_read_never_suspends_from_their_own_code_not_from_a_declaration() -> None:
    class Plain(Tool[EchoIn, EchoOut]):
        name = "plain_echo"
        description = "Echo the text."

        async def execute(self, input: EchoIn, ctx: ToolContext) -> EchoOut:
            return EchoOut(text=input.text)

    class Waits(Plain):
        name = "waiting_echo"

        async def execute(self, input: EchoIn, ctx: ToolContext) -> EchoOut:
            await anyio.sleep(0)
            return EchoOut(text=input.text)

    class Sync(Tool[EchoIn, EchoOut]):
        name = "sync_echo2"
        description = "Echo the text."

        def execute(self, input: EchoIn, ctx: ToolContext) -> EchoOut:
            return EchoOut(text=input.text)

    assert Plain.never_suspends and not Waits.never_suspends and not Sync.never_suspends
    assert tool(_plain).never_suspends and not tool(_awaits).never_suspends

    class Subclassed(FunctionTool):  # an execute of its own may await: the function's code no longer decides
        async def execute(self, input: BaseModel, ctx: ToolContext) -> BaseModel:  # type: ignore[override]
            await anyio.sleep(0)
            return await super().execute(input, ctx)  # type: ignore[misc]

    assert not Subclassed(_plain).never_suspends


def test_a_tool_has_subjects_when_its_input_marks_one_or_it_reads_its_own() -> None:
    @tool(name="marked")
    def marked(path: Annotated[str, Subject("path")]) -> str:
        """Read a path."""
        return path

    @tool(name="unmarked")
    def unmarked(text: str) -> str:
        """Echo text."""
        return text

    class Computed(Tool[ToolInput, ToolOutput]):
        name = "computed"
        description = "Subjects computed from the call."
        subject_kind = "path"

        def subjects(self, input: ToolInput) -> list[str]:
            return ["somewhere"]

        def execute(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
            return ToolOutput()

    assert marked.has_subjects and Computed().has_subjects and not unmarked.has_subjects
    assert marked.subjects(marked.input_model(path="a.txt")) == ["a.txt"]
    assert unmarked.subjects(unmarked.input_model(text="x")) == []


@pytest.mark.anyio
async def test_a_functions_arguments_reach_it_as_validated_whether_or_not_it_takes_its_context(
    workspace: Path,
) -> None:
    @tool(name="defaults")
    async def defaults(a: int, b: str = "b", c: list[int] | None = None) -> dict[str, Any]:
        """Return what arrived."""
        return {"a": a, "b": b, "c": c}

    @tool(name="with_context")
    async def with_context(a: int, ctx: ToolContext, b: str = "b") -> dict[str, Any]:
        """Return what arrived, and the tool's own name from the context."""
        return {"a": a, "b": b, "tool": ctx.tool_name}

    rig = Rig(workspace, config={}, registry=Registry([defaults, with_context]))
    assert (await rig.call("defaults", {"a": "7"})).output == {"result": {"a": 7, "b": "b", "c": None}}
    assert (await rig.call("defaults", {"a": 1, "c": 5})).output == {"result": {"a": 1, "b": "b", "c": [5]}}
    assert (await rig.call("with_context", {"a": 2, "b": "x"})).output == {
        "result": {"a": 2, "b": "x", "tool": "with_context"}
    }

    # Called directly with an instance of another model (not the tool's own), fields are read one by one.
    class Wider(BaseModel):
        a: int
        b: str = "w"
        c: list[int] | None = None
        extra: str = "never passed"

    output = await defaults.execute(Wider(a=3), None)  # type: ignore[arg-type, misc]
    assert output.model_dump() == {"result": {"a": 3, "b": "w", "c": None}}
