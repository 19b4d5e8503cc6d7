"""The sample tools every test shares: real tools (not mocks), each exercising one path.

Executor paths (``Echo`` ... ``Shapes``, ``all_tools()``), the agent loop's ordering probes (``add`` ...
``wipe``, ``agent_tools()``, recording into ``PROBE``) and the durable runs' workspace tools (``AppendLine``,
``Gate``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar

import anyio
from pydantic import BaseModel, Field

from toolrig import Tool, ToolContext, ToolError, ToolInput, ToolOutput, tool
from toolrig.errors import ErrorType
from toolrig.registry import AnyTool
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


# ------------------------------------------------------------------ agent loop


@dataclass
class Probe:
    log: list[str] = field(default_factory=list)
    parties: int = 2
    arrived: int = 0
    _all_here: anyio.Event | None = None
    _started: anyio.Event | None = None

    @property
    def all_here(self) -> anyio.Event:
        if self._all_here is None:
            self._all_here = anyio.Event()
        return self._all_here

    @property
    def started(self) -> anyio.Event:
        """Set when a ``hang`` call has started."""
        if self._started is None:
            self._started = anyio.Event()
        return self._started


PROBE = Probe()


def reset_probe(parties: int = 2) -> Probe:
    global PROBE
    PROBE = Probe(parties=parties)
    return PROBE


@tool(read_only=True)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def rendezvous(name: str) -> str:
    """Wait until every expected party has arrived; only concurrent calls can all finish."""
    probe = PROBE
    probe.log.append(f"start:{name}")
    probe.arrived += 1
    if probe.arrived >= probe.parties:
        probe.all_here.set()
    with anyio.move_on_after(5) as scope:
        await probe.all_here.wait()
    if scope.cancelled_caught:
        raise ToolError(ErrorType.TIMEOUT, f"{name} waited alone: the calls did not run concurrently")
    probe.log.append(f"end:{name}")
    return name


@tool
async def note(name: str) -> str:
    """Record a start and an end with a checkpoint in between."""
    PROBE.log.append(f"note:start:{name}")
    await anyio.sleep(0)
    await anyio.sleep(0)
    PROBE.log.append(f"note:end:{name}")
    return name


@tool(sequential=True)
async def step(name: str) -> str:
    """A call that must run alone: a barrier between the calls before and after it."""
    PROBE.log.append(f"step:start:{name}")
    await anyio.sleep(0)
    PROBE.log.append(f"step:end:{name}")
    return name


@tool(terminal=True)
async def final_answer(answer: str) -> str:
    """Give the final answer and end the run."""
    return answer


@tool
async def hang() -> str:
    """Start, then wait until cancelled."""
    PROBE.log.append("hang:start")
    PROBE.started.set()
    try:
        await anyio.sleep_forever()
    finally:
        PROBE.log.append("hang:stopped")
    return "never"


@tool(destructive=True)
async def wipe(target: str) -> str:
    """Pretend to delete something (the approval tests' dangerous tool)."""
    PROBE.log.append(f"wipe:{target}")
    return f"wiped {target}"


def agent_tools() -> list[AnyTool]:
    return [add, rendezvous, note, step, final_answer, hang, wipe]


# ------------------------------------------------------------------ durable runs

OUT = "out.txt"


class AppendInput(ToolInput):
    line: str = Field(max_length=200)


class AppendOutput(ToolOutput):
    appended: str


class AppendLine(Tool[AppendInput, AppendOutput]):
    """Appends one line to out.txt with O_APPEND (one write, so concurrent lines never interleave)."""

    name = "append_line"
    description = "Append a line to out.txt."

    def execute(self, input: AppendInput, ctx: ToolContext) -> AppendOutput:
        fd = os.open(ctx.workspace.root / OUT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (input.line + "\n").encode())
        finally:
            os.close(fd)
        return AppendOutput(appended=input.line)


class GateInput(ToolInput):
    pass


class GateOutput(ToolOutput):
    opened: bool


class Gate(Tool[GateInput, GateOutput]):
    """Blocks until the file ``release`` exists in the workspace: holds a run mid-task for a kill test."""

    name = "gate"
    description = "Wait for the release file."

    def execute(self, input: GateInput, ctx: ToolContext) -> GateOutput:
        release = ctx.workspace.root / "release"
        pause = threading.Event()
        deadline = time.monotonic() + 120
        while not release.exists() and time.monotonic() < deadline:
            pause.wait(0.05)
        return GateOutput(opened=release.exists())
