"""Tools for the agent-loop tests: each records what it did in ``PROBE`` so tests can check ordering."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from toolrig import ToolError, tool
from toolrig.errors import ErrorType
from toolrig.registry import AnyTool


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
