"""The parts of a run's turns that are not its loop: its progress, its sink, how a turn ends, a paused state.

Split from ``loop.py`` so that the loop reads as the loop; ``_Run`` uses these and nothing here runs a turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolrig.agent.calls import CallOutcome, preview
from toolrig.agent.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from toolrig.agent.providers import TurnComplete
from toolrig.agent.session import ToolCallRecord
from toolrig.agent.state import PendingCall, RunOptions, RunResult, RunState, StopReason
from toolrig.agent.subagents.nodes import Lineage, RunNode
from toolrig.agent.usage import Usage
from toolrig.approvals.paused import PauseChannel
from toolrig.approvals.questions import question_json
from toolrig.content import parts_to_json
from toolrig.events import Event
from toolrig.profiles import Profile
from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.rig import Rig


class RunSink:
    """The run's event sink: a plain callback, or nothing."""

    __slots__ = ("emit",)

    def __init__(self, callback: Callable[[Event], None] | None) -> None:
        self.emit: Callable[[Event], None] = callback or (lambda event: None)


log = logging.getLogger("toolrig.agent")


@dataclass
class Progress:
    messages: list[Message]
    new_from: int
    usage: Usage = field(default_factory=Usage)
    turns_used: int = 0
    session_turn: int = 0
    partial: list[str] = field(default_factory=list)
    unsaved: list[Message] = field(default_factory=list)  # written with the next record, in one transaction
    open_turn: bool = False  # an assistant turn with calls whose results are not recorded yet


def ends_run(tool: AnyTool, result: ToolResult) -> bool:
    """A terminal tool's success ends the run, unless the tool says this output does not (wait_task on children)."""
    if not tool.terminal or result.is_error:
        return False
    ends = getattr(tool, "ends_run", None)
    return bool(ends(result.output)) if callable(ends) else True


def run_profile(rig: Rig, options: RunOptions, lineage: Lineage | None = None) -> Profile:
    """The profile a run's model sees.

    In order: the run's own, a subagent's type's ``profile:``, the rig's, the agent's ``profile:``, then
    ``llm.tool_profile``.
    """
    from toolrig.profiles import get_profile

    if options.profile is not None:
        return get_profile(options.profile)
    kind = getattr(getattr(lineage, "kind", None), "profile", None)  # the spawned agent type's settings
    if getattr(kind, "profile", None):
        return get_profile(kind.profile)  # type: ignore[union-attr]
    if not rig.profile.is_identity:
        return rig.profile
    agent = rig.config.agents.get(rig.agent) if rig.agent else None
    return get_profile(getattr(agent, "profile", None) or rig.config.llm.tool_profile)


def stop_of(complete: TurnComplete) -> StopReason:
    """A final answer cut off by the token limit is not a completed run: callers must be able to tell."""
    return "max_tokens" if complete.stop_reason == "length" else "completed"


def record_of(call: ToolCallBlock, result: ToolResult, turn: int) -> ToolCallRecord:
    return ToolCallRecord(
        call.id, max(turn, 0), call.name, call.arguments, result.is_error, preview(result), result.meta.duration_ms
    )


def terminal_text(output: dict[str, Any]) -> str:
    """A terminal tool's output as the run's response: its one text field, or the JSON."""
    import json

    if len(output) == 1:
        (value,) = output.values()
        if isinstance(value, str):
            return value
    return json.dumps(output, ensure_ascii=False)


def paused_result(
    run: Any,
    progress: Progress,
    calls: list[ToolCallBlock],
    done: dict[str, ToolResultBlock],
    by_id: dict[str, CallOutcome],
) -> RunResult:
    """The run paused for a person's decisions: its state (pending calls, results so far, children's states)."""
    paused = run.pause or PauseChannel()
    requests = paused.pending
    pending: list[PendingCall] = []
    results: dict[str, dict[str, Any]] = {k: {"content": v.content, "is_error": v.is_error} for k, v in done.items()}
    for call in calls:
        outcome = by_id.get(call.id)
        if outcome is None:
            continue
        if outcome.paused or outcome.result is None:
            request = requests.get(call.id)
            pending.append(
                PendingCall(
                    call.id,
                    call.name,
                    call.arguments,
                    reason=request.reason if request else "",
                    subjects=list(request.subjects) if request else [],
                    needs_approval=request is not None and not request.questions,
                    questions=[question_json(q) for q in request.questions] if request else [],
                    fingerprint=request.fingerprint if request else "",
                )
            )
        else:
            result = outcome.result
            results[call.id] = {"content": result.to_json(), "is_error": result.is_error}
            if result.content:  # an image read before the pause reaches the model after it
                results[call.id]["media"] = parts_to_json(result.content)
    paused.pending.clear()
    pending, children = children_paused(run.node, pending)
    s = run.provider.settings
    state = RunState(
        session_id=run.session_id,
        provider=s.provider,
        model=s.model,
        system_prompt=run.system,
        turns_used=progress.turns_used,
        max_turns=run.max_turns,
        messages=list(progress.messages),
        new_from=progress.new_from,
        pending=pending,
        results=results,
        usage=progress.usage,
        children=children,
    )
    progress.open_turn = False  # the calls stay open on purpose: the resumed run answers them
    run._record(progress, [], status="paused")
    stopped: RunResult = run._result(progress, "", "paused", state=state)
    return stopped


def children_paused(node: RunNode | None, pending: list[PendingCall]) -> tuple[list[PendingCall], dict[str, Any]]:
    """A pause that subagents share: their waiting calls join the run's pending list, their states its own."""
    if node is None or not node.paused_spawns:
        return pending, {}
    spawns = dict(node.paused_spawns)
    node.paused_spawns.clear()
    out: list[PendingCall] = []
    for call in pending:
        saved = spawns.get(call.call_id)
        if saved is None:
            out.append(call)
            continue
        call.needs_approval, call.reason = False, "waits for its subagents' calls to be decided"
        out.append(call)
        for child in saved["children"]:
            state = child.get("state")
            for item in (state or {}).get("pending", []):
                out.append(PendingCall(**{**item, "task_id": item.get("task_id") or child["task_id"]}))
    return out, {"counter": node.counter, "spawns": spawns}


def todo_reminder(stores: Any, session_id: str, history: list[Message]) -> TextBlock | None:
    """A continued session starts with the model's own todo list, so it is never lost with old turns."""
    if not history:
        return None
    try:
        todos = stores.notes.get(session_id, "todos")
    except Exception:  # a reminder is a courtesy: an unreadable notes file must not stop the run
        log.warning("could not read the todo list of session %s", session_id, exc_info=True)
        return None
    if not todos:
        return None
    lines = [f"- [{t.get('status', 'pending')}] {t.get('task', '')}" for t in todos if isinstance(t, dict)]
    return TextBlock("Your todo list so far (update it with write_todos):\n" + "\n".join(lines))
