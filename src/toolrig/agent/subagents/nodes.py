"""The hub's records: a live run (``RunNode``), a child it started (``Child``), and a child's place (``Lineage``).

Apart from ``hub`` (which spawns, waits and cancels) so that the loop and the routing of a child's approvals
read them without the hub's machinery.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from toolrig.agent.budget import Ledger
from toolrig.agent.providers import Provider
from toolrig.agent.state import RunOptions
from toolrig.agent.subagents.types import AgentType
from toolrig.agent.usage import Usage
from toolrig.approvals.channel import ApprovalChannel
from toolrig.approvals.paused import PauseChannel
from toolrig.event_bus import EventSink
from toolrig.permissions import AgentView
from toolrig.registry import AnyTool

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from toolrig.agent.state import RunState
    from toolrig.agent.subagents.hub import SubagentHub

UNSET: Any = object()
STATUSES = ("started", "running", "done", "failed", "cancelled", "timed_out")
ENDED = frozenset({"done", "failed", "cancelled", "timed_out"})
SUMMARY_CHARS = 300
PREVIEW_CHARS = 120


class HubRun(Protocol):
    """What the hub reads of a run it holds (``toolrig.agent.loop``'s): who it is, its model, its channels."""

    @property
    def session_id(self) -> str: ...

    @property
    def agent_id(self) -> str | None: ...

    @property
    def view(self) -> AgentView: ...

    @property
    def offered(self) -> Mapping[str, AnyTool]: ...

    @property
    def provider(self) -> Provider: ...

    @property
    def options(self) -> RunOptions: ...

    @property
    def sink(self) -> EventSink: ...

    @property
    def pause(self) -> PauseChannel | None: ...

    @property
    def hub(self) -> SubagentHub: ...

    def _channel(self) -> ApprovalChannel | None: ...


@dataclass(eq=False)
class RunNode:
    """One live run known to the hub: a root run or a child."""

    run: HubRun  # the loop's run
    task_id: str
    agent_id: str | None
    depth: int
    parent: RunNode | None = None
    agent_type: str | None = None
    spawns: tuple[str, ...] | None = None  # None: any type (a root run)
    output_schema: dict[str, Any] | None = None
    output: Any = UNSET
    children: dict[str, Child] = field(default_factory=dict)
    background: TaskGroup | None = None  # the run's own task group: background children end with the run
    usage: Usage | None = None  # the run's running total (children's spend is added to it when they end)
    ledger: Ledger | None = None  # the run's budget, charged live by it and its descendants (agent/budget.py)
    counter: int = 0
    paused_spawns: dict[str, dict[str, Any]] = field(default_factory=dict)  # spawn call id -> saved children
    resuming: dict[str, dict[str, Any]] = field(default_factory=dict)  # the same, read back from a RunState
    decisions: Mapping[str, Any] = field(default_factory=dict)  # a person's decisions, for resumed children
    limit: anyio.Semaphore = field(default_factory=lambda: anyio.Semaphore(1))  # set on entering

    @property
    def root(self) -> RunNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node


@dataclass(eq=False)
class Child:
    task_id: str
    agent_id: str
    agent_type: str
    parent_task_id: str
    prompt: str
    started: float = field(default_factory=time.monotonic)
    status: str = "started"
    tool_calls: int = 0
    last_tool: str | None = None
    record: dict[str, Any] | None = None
    paused: RunState | None = None  # the child stopped for approvals (a root run that pauses)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None
    cancel_requested: bool = False
    background: bool = False

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def row(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "agent_id": self.agent_id,
            "agent_type": self.agent_type,
            "status": self.status,
            "tool_calls": self.tool_calls,
            "elapsed_ms": round(self.elapsed_ms() if self.record is None else self.record["usage"]["duration_ms"]),
            "prompt_preview": self.prompt[:PREVIEW_CHARS],
        }


@dataclass
class Lineage:
    """What a child's _Run is told about where it sits, before it starts."""

    parent: RunNode
    child: Child
    kind: AgentType
    view: AgentView  # the child's permissions: its parent's view narrowed by its type (``narrowing.py``)
