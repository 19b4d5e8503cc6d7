"""Events: everything a front end (terminal chat, JSON lines, MCP progress) renders comes from here.

One discriminated union of frozen dataclasses keyed by ``type``; ``event_to_json`` / ``event_from_json``
give the stable wire form used by ``toolrig run --json``. The bus and sinks they travel through are in
``toolrig.event_bus`` (above this module: it names the union; the executor and a rig hold a bus without
building these 20 dataclasses, which load with the first event made).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import Field

if TYPE_CHECKING:
    from pydantic import TypeAdapter


@dataclass(frozen=True, slots=True)
class InitEvent:
    session_id: str
    type: Literal["init"] = "init"


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    id: str
    name: str
    args: dict[str, Any]
    type: Literal["tool_call"] = "tool_call"
    task_id: str | None = None  # set when a subagent's call is forwarded to its root run's events


@dataclass(frozen=True, slots=True)
class ToolCallDeltaEvent:
    id: str
    name: str
    delta: str
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    id: str
    name: str
    preview: str
    is_error: bool
    type: Literal["tool_result"] = "tool_result"
    task_id: str | None = None  # set when a subagent's result is forwarded to its root run's events


@dataclass(frozen=True, slots=True)
class ToolProgressEvent:
    """A long tool reports how far it got; MCP turns it into a progress notification."""

    id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None
    type: Literal["tool_progress"] = "tool_progress"


LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""Syslog's levels, as MCP's ``notifications/message`` carries them (lowest first)."""


@dataclass(frozen=True, slots=True)
class ToolLogEvent:
    """A tool's log line or warning; an MCP client that set a level at or below it gets it as a message."""

    id: str
    name: str
    level: LogLevel
    message: str
    type: Literal["tool_log"] = "tool_log"


@dataclass(frozen=True, slots=True)
class StreamTextEvent:
    text: str
    type: Literal["stream_text"] = "stream_text"


@dataclass(frozen=True, slots=True)
class ChunkEvent:
    """The final text of a model turn."""

    text: str
    type: Literal["chunk"] = "chunk"
    task_id: str | None = None  # a subagent's turn text, forwarded (unless subagents.hide_child_text)


@dataclass(frozen=True, slots=True)
class ThinkingEvent:
    state: Literal["start", "end"]
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ThinkingDeltaEvent:
    text: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, slots=True)
class UsageEvent:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0
    type: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class ApprovalRequestEvent:
    id: str
    tool: str
    args: dict[str, Any]
    subjects: list[str] = field(default_factory=list)
    reason: str = ""
    type: Literal["approval_request"] = "approval_request"


@dataclass(frozen=True, slots=True)
class ApprovalResolvedEvent:
    id: str
    tool: str
    decision: Literal["allow_once", "allow_always", "deny"]
    reason: str = ""
    type: Literal["approval_resolved"] = "approval_resolved"


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The run finished: its final response and why it stopped (the last line of ``toolrig run --json``)."""

    session_id: str
    response: str
    stop_reason: Literal["completed", "terminal", "max_turns", "max_tokens", "paused", "aborted"]
    type: Literal["done"] = "done"
    output: Any = None  # RunResult.output: the last valid set_output value, or a terminal tool's output


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The run failed (provider error, timeout, budget); ``kind`` is stable for scripts to branch on."""

    kind: str
    message: str
    type: Literal["error"] = "error"


@dataclass(frozen=True, slots=True)
class SubagentStartEvent:
    """A child run started. ``task_id`` is the child's session id; ``parent_task_id`` its parent's."""

    agent_id: str
    task_id: str
    agent_type: str
    parent_task_id: str
    prompt: str = ""
    type: Literal["subagent_start"] = "subagent_start"


@dataclass(frozen=True, slots=True)
class SubagentProgressEvent:
    """A child is still running (sent at least every 2 seconds while it does)."""

    task_id: str
    tool_calls: int
    duration_ms: float
    last_tool: str | None = None
    type: Literal["subagent_progress"] = "subagent_progress"


@dataclass(frozen=True, slots=True)
class SubagentDoneEvent:
    """A child ended: done, failed, cancelled or timed_out; ``usage`` is its result record's usage."""

    task_id: str
    status: str
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    type: Literal["subagent_done"] = "subagent_done"


@dataclass(frozen=True, slots=True)
class TodosEvent:
    """The model replaced its todo list (``write_todos``): front ends show it live."""

    session_id: str | None
    todos: list[dict[str, str]]
    type: Literal["todos"] = "todos"


@dataclass(frozen=True, slots=True)
class FollowupsEvent:
    """Next steps the model suggests (``suggest_followups``), shown as a numbered list after the answer."""

    session_id: str | None
    followups: list[str]
    type: Literal["followups"] = "followups"


Event: TypeAlias = Annotated[
    InitEvent
    | ToolCallEvent
    | ToolCallDeltaEvent
    | ToolResultEvent
    | ToolProgressEvent
    | ToolLogEvent
    | StreamTextEvent
    | ChunkEvent
    | ThinkingEvent
    | ThinkingDeltaEvent
    | UsageEvent
    | ApprovalRequestEvent
    | ApprovalResolvedEvent
    | DoneEvent
    | ErrorEvent
    | SubagentStartEvent
    | SubagentProgressEvent
    | SubagentDoneEvent
    | TodosEvent
    | FollowupsEvent,
    Field(discriminator="type"),
]


@cache
def _adapter() -> TypeAdapter[Event]:
    from pydantic import TypeAdapter

    return TypeAdapter(Event)


def event_to_json(event: Event) -> dict[str, Any]:
    return asdict(event)


def event_from_json(data: dict[str, Any]) -> Event:
    return _adapter().validate_python(data)
