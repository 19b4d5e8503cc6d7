"""Small tools that exercise each executor path; real tools, not mocks."""

from __future__ import annotations

import threading
import time
from typing import ClassVar

import anyio
from pydantic import BaseModel, Field

from toolrig import Tool, ToolContext, ToolError, ToolInput, ToolOutput
from toolrig.errors import ErrorType
from toolrig.sandbox.atomic import atomic_write_text


class TextIn(ToolInput):
    text: str


class TextOut(ToolOutput):
    text: str


class Echo(Tool[TextIn, TextOut]):
    name = "echo"
    group = "sample"
    description = "Echo the text."
    read_only = True

    async def execute(self, input: TextIn, ctx: ToolContext) -> TextOut:
        return TextOut(text=input.text)


class SyncEcho(Tool[TextIn, TextOut]):
    name = "sync_echo"
    group = "sample"
    description = "Echo the text from a worker thread."

    def execute(self, input: TextIn, ctx: ToolContext) -> TextOut:
        return TextOut(text=f"{input.text} from {threading.current_thread().name}")


class Refuse(Tool[TextIn, TextOut]):
    name = "refuse"
    group = "sample"
    description = "Always refuses."

    def execute(self, input: TextIn, ctx: ToolContext) -> TextOut:
        raise ToolError(ErrorType.NOT_FOUND, f"nothing called {input.text}", "look elsewhere")


class Boom(Tool[TextIn, TextOut]):
    name = "boom"
    group = "sample"
    description = "Has a bug."

    def execute(self, input: TextIn, ctx: ToolContext) -> TextOut:
        return TextOut(text=str(1 / 0))


class WrongOutput(Tool[TextIn, TextOut]):
    name = "wrong_output"
    group = "sample"
    description = "Returns the wrong shape."

    def execute(self, input: TextIn, ctx: ToolContext) -> TextOut:
        return {"nope": 1}  # type: ignore[return-value]


class SleepIn(ToolInput):
    seconds: float


class SleepAsync(Tool[SleepIn, TextOut]):
    name = "sleep_async"
    group = "sample"
    description = "Sleeps."

    async def execute(self, input: SleepIn, ctx: ToolContext) -> TextOut:
        await anyio.sleep(input.seconds)
        return TextOut(text="slept")


class WriteLaterIn(ToolInput):
    path: str
    delay: float


class WriteLater(Tool[WriteLaterIn, TextOut]):
    """A sync tool that writes after a delay: the case a timeout must stop."""

    name = "write_later"
    group = "sample"
    description = "Waits, then writes a file."

    started = threading.Event()
    finished = threading.Event()
    outcome: ClassVar[list[str]] = []

    def execute(self, input: WriteLaterIn, ctx: ToolContext) -> TextOut:
        WriteLater.started.set()
        try:
            ctx.cancel.wait(input.delay)
            time.sleep(0.05)  # the write is attempted after the deadline, whatever the token says
            atomic_write_text(ctx.workspace.resolve(input.path, write=True), "written")
            WriteLater.outcome.append("wrote")
        except ToolError as exc:
            WriteLater.outcome.append(exc.error_type.value)
            raise
        finally:
            WriteLater.finished.set()
        return TextOut(text="done")


class SizeIn(ToolInput):
    chars: int
    items: int = 1


class BigOut(ToolOutput):
    blobs: list[str]


class Big(Tool[SizeIn, BigOut]):
    name = "big"
    group = "sample"
    description = "Returns a lot."

    def execute(self, input: SizeIn, ctx: ToolContext) -> BigOut:
        return BigOut(blobs=[f"{i:05d}" + "x" * input.chars for i in range(input.items)])


class Filter(BaseModel):
    field: str
    value: int


class ShapesIn(ToolInput):
    tags: list[str] = Field(default_factory=list)
    filter: Filter | None = None
    limit: int = 10
    mode: str = "fast"


class ShapesOut(ToolOutput):
    seen: dict[str, object]


class Shapes(Tool[ShapesIn, ShapesOut]):
    name = "shapes"
    group = "sample"
    description = "Reports what it received."

    def execute(self, input: ShapesIn, ctx: ToolContext) -> ShapesOut:
        return ShapesOut(seen=input.model_dump())


def all_tools() -> list[Tool]:  # type: ignore[type-arg]
    return [Echo(), SyncEcho(), Refuse(), Boom(), WrongOutput(), SleepAsync(), WriteLater(), Big(), Shapes()]
