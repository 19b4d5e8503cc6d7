"""Running the tool calls of one model turn: concurrently, with ``sequential`` tools as barriers.

Calls between barriers run at once; a call to a ``sequential`` tool waits for every call before it and
every call after it waits for it. Results come back in call order, whatever order they finished in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from toolrig.agent.messages import ToolCallBlock
from toolrig.agent.state import Steps
from toolrig.approvals.paused import PauseChannel
from toolrig.event_bus import EventSink
from toolrig.events import ToolResultEvent
from toolrig.profiles import Profile
from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.rig import Rig
from toolrig.scope import CallScope

PREVIEW_CHARS = 150


@dataclass(slots=True)
class CallOutcome:
    call: ToolCallBlock
    result: ToolResult | None = None  # None: not run, because an earlier call paused the turn
    paused: bool = False


def preview(result: ToolResult) -> str:
    if result.is_error:
        text = f"{result.error_type}: {result.message}"
    else:
        text = json.dumps(result.output, ensure_ascii=False, separators=(",", ":"))
    return text[:PREVIEW_CHARS]


def barrier_groups(calls: Sequence[ToolCallBlock], offered: dict[str, AnyTool]) -> list[list[int]]:
    """Indexes of calls that may run together, in order; a sequential tool's call stands alone."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index, call in enumerate(calls):
        tool = offered.get(call.name)
        if tool is not None and tool.sequential:
            if current:
                groups.append(current)
                current = []
            groups.append([index])
        else:
            current.append(index)
    if current:
        groups.append(current)
    return groups


async def run_calls(
    calls: Sequence[ToolCallBlock],
    *,
    rig: Rig,
    offered: dict[str, AnyTool],
    session_id: str,
    events: EventSink,
    pause: PauseChannel | None = None,
    steps: Steps | None = None,
    agent_id: str | None = None,
    parent_agent_id: str | None = None,
    profile: Profile | None = None,
    scope: CallScope | None = None,
) -> list[CallOutcome]:
    outcomes = [CallOutcome(call) for call in calls]

    async def invoke(call: ToolCallBlock) -> ToolResult:
        from toolrig.adapters.faces import call_speaking

        options: dict[str, Any] = {
            "call_id": call.id,
            "origin": "agent",
            "agent_id": agent_id,
            "parent_agent_id": parent_agent_id,
            "session_id": session_id,
            "events": events,
            "offered": offered,
            "scope": scope,
        }
        if profile is None:
            return await rig.executor.invoke(call.name, call.arguments, **options)
        return await call_speaking(rig.executor, profile, call.name, call.arguments, **options)

    async def one(index: int) -> None:
        call = calls[index]
        # Every call goes through the one gate, a call of a tool this run does not offer too: it is
        # refused there, before its arguments are read, and recorded like any other.
        if steps is None:
            result = await invoke(call)
        else:
            result = await steps.tool_call(f"tool-{call.id}", lambda: invoke(call))
        outcome = outcomes[index]
        outcome.result = result
        if pause is not None and call.id in pause.pending:
            outcome.paused = True
            return
        events.emit(ToolResultEvent(call.id, call.name, preview(result), result.is_error))

    for group in barrier_groups(calls, offered):
        if pause is not None and any(o.paused for o in outcomes):
            break  # the calls after a paused one wait for the person too, in order
        if len(group) == 1:
            await one(group[0])
            continue
        async with anyio.create_task_group() as tasks:
            for index in group:
                tasks.start_soon(one, index)
    return outcomes
