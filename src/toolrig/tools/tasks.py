"""Task tools: queue work for later (``tasks``), and the terminal tools that end a task's run.

Trust model: prompts and reasons are the model's. ``complete_task`` / ``fail_task`` / ``wait_task`` only
report what the run decided; the worker that runs the task writes the status, and only for its own task.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.durable.api import Durable, DurableError
from toolrig.errors import ErrorType, ToolError

_RELATIVE = re.compile(r"^\+(\d{1,7})([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _durable(ctx: ToolContext) -> Durable:
    if ctx.durable is None:
        raise ToolError(ErrorType.UNAVAILABLE, "Tasks are not available here.")
    return ctx.durable


def _current_task(ctx: ToolContext, tool: str) -> str:
    task_id = _durable(ctx).tasks.current_task()
    if task_id is None:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{tool} ends a queued task's run, and this run has no task.",
            next_action_hint="Just answer normally; use the tasks tool to queue work for later.",
        )
    return task_id


# ---------------------------------------------------------------------------------------------- tasks


class TasksInput(ToolInput):
    action: Literal["add", "show"] = Field(description="add: queue a task (prompt); show: a task's status (id).")
    prompt: str | None = Field(
        default=None, max_length=100_000, description="What the task's agent run is asked (add)."
    )
    after: str | None = Field(
        default=None,
        max_length=64,
        description="Not before this time (add): ISO 8601 ('2026-05-01T09:00', naive is UTC) or '+30s', '+20m', '+2h'.",
    )
    id: str | None = Field(default=None, max_length=120, description="The task id (show).")


class TasksOutput(ToolOutput):
    task: dict[str, Any]


class Tasks(Tool[TasksInput, TasksOutput]):
    name = "tasks"
    group = "tasks"
    description = (
        "Queue work for a background agent run ('add' with a prompt, optionally 'after' a time), or check a queued "
        "task ('show' with its id). A worker runs queued tasks; the run is a fresh session given only the prompt."
    )

    def execute(self, input: TasksInput, ctx: ToolContext) -> TasksOutput:
        tasks = _durable(ctx).tasks
        try:
            if input.action == "add":
                if not input.prompt or not input.prompt.strip():
                    raise ToolError(ErrorType.INVALID_INPUT, "The 'add' action needs 'prompt'.")
                # The task runs as the agent that queued it: queueing must not widen its permissions.
                task = tasks.add_task(prompt=input.prompt, by="model", after=input.after, agent=ctx.agent_id)
                return TasksOutput(task={"id": task["id"], "status": task["status"]})
            if not input.id:
                raise ToolError(ErrorType.INVALID_INPUT, "The 'show' action needs 'id'.")
            found = tasks.task(input.id, by="model", agent=ctx.agent_id)
        except DurableError as exc:
            raise exc.tool_error() from None
        if found is None:
            raise ToolError(ErrorType.NOT_FOUND, f"No task with id {input.id!r}.")
        keep = ("id", "status", "result", "created_at", "ended_at", "attempt")
        return TasksOutput(task={k: found[k] for k in keep})

    def subjects(self, input: TasksInput) -> list[str]:
        return [f"{input.action}:{input.id or ''}"]


# ---------------------------------------------------------------------------------------------- terminal


class CompleteTaskInput(ToolInput):
    summary: str = Field(min_length=1, max_length=20_000, description="What was done, for whoever reads the task.")


class CompleteTaskOutput(ToolOutput):
    task_status: Literal["done"] = "done"
    task_id: str
    summary: str


class CompleteTask(Tool[CompleteTaskInput, CompleteTaskOutput]):
    name = "complete_task"
    group = "tasks"
    terminal = True
    read_only = True  # it reports the run's own end; the worker writes the status: nothing for a person to approve
    description = "End this task's run as done, with a summary of what was done. Call it last."

    def execute(self, input: CompleteTaskInput, ctx: ToolContext) -> CompleteTaskOutput:
        return CompleteTaskOutput(task_id=_current_task(ctx, self.name), summary=input.summary)


class FailTaskInput(ToolInput):
    reason: str = Field(min_length=1, max_length=20_000, description="Why the task cannot be done.")


class FailTaskOutput(ToolOutput):
    task_status: Literal["failed"] = "failed"
    task_id: str
    reason: str


class FailTask(Tool[FailTaskInput, FailTaskOutput]):
    name = "fail_task"
    group = "tasks"
    terminal = True
    read_only = True  # as complete_task: a report of the run's own end
    description = "End this task's run as failed, saying why it cannot be done. Call it last."

    def execute(self, input: FailTaskInput, ctx: ToolContext) -> FailTaskOutput:
        return FailTaskOutput(task_id=_current_task(ctx, self.name), reason=input.reason)


class WaitTaskInput(ToolInput):
    task_ids: list[str] | None = Field(
        default=None,
        max_length=64,
        description="Wait now, in this run, for these tasks to end: subagent task ids (spawn_agents) or queued "
        "tasks (tasks add). Omitted with no 'until'/'for_task': every subagent of this run.",
    )
    timeout_seconds: float = Field(
        default=300.0, gt=0, le=3600, description="Longest to wait (task_ids); what has not ended by then is listed."
    )
    mode: Literal["any", "all"] = Field(
        default="any", description="any: return when one has ended; all: when every one has (task_ids)."
    )
    until: str | None = Field(
        default=None,
        max_length=64,
        description="End this queued task's run and resume it at this time: ISO 8601 ('2026-05-01T09:00', naive is "
        "UTC) or '+30s', '+20m', '+2h', '+1d'.",
    )
    for_task: str | None = Field(
        default=None, max_length=120, description="End this queued task's run and resume it when this task has ended."
    )


class WaitTaskOutput(ToolOutput):
    task_status: Literal["waiting", "waited"] = "waiting"
    task_id: str | None = None
    until: str | None = None
    until_epoch: float | None = None
    for_task: str | None = None
    summary: str
    ended: list[dict[str, Any]] = Field(default_factory=list, description="Tasks that ended: their result records.")
    pending: list[str] = Field(default_factory=list, description="Tasks still running when the wait ended.")


class WaitTask(Tool[WaitTaskInput, WaitTaskOutput]):
    """One tool for both kinds of waiting, because models know one name for it.

    ``until`` / ``for_task`` end a queued task's run (terminal: the worker resumes the conversation later,
    perhaps in another process). ``task_ids`` (or nothing) wait inside the live run for subagents or queued
    tasks and return their results; that output does not end the run (``ends_run``).
    """

    name = "wait_task"
    group = "tasks"
    terminal = True
    read_only = True
    timeout_seconds = 3700.0
    description = (
        "Wait for tasks. With task_ids (or nothing): wait here for subagents (spawn_agents background) or queued "
        "tasks to end, mode any|all, up to timeout_seconds, and get their results. With 'until' or 'for_task' "
        "(inside a queued task's run): pause this run and resume it later; call that last."
    )

    def ends_run(self, output: dict[str, Any] | None) -> bool:
        return bool(output) and output.get("task_status") == "waiting"  # type: ignore[union-attr]

    async def execute(self, input: WaitTaskInput, ctx: ToolContext) -> WaitTaskOutput:
        if input.until is None and input.for_task is None:
            return await _wait_here(input, ctx)
        if input.task_ids is not None:
            raise ToolError(ErrorType.INVALID_INPUT, "Give either task_ids or one of 'until'/'for_task', not both.")
        task_id = _current_task(ctx, self.name)
        if (input.until is None) == (input.for_task is None):
            raise ToolError(ErrorType.INVALID_INPUT, "Give exactly one of 'until' and 'for_task'.")
        if input.for_task is not None:
            if input.for_task == task_id:
                raise ToolError(ErrorType.INVALID_INPUT, "A task cannot wait for itself.")
            if _durable(ctx).tasks.task(input.for_task, by="model", agent=ctx.agent_id) is None:
                raise ToolError(ErrorType.NOT_FOUND, f"No task with id {input.for_task!r}.")
            return WaitTaskOutput(task_id=task_id, for_task=input.for_task, summary=f"waiting for {input.for_task}")
        when = _when(input.until or "")
        return WaitTaskOutput(
            task_id=task_id,
            until=when.isoformat(),
            until_epoch=when.timestamp(),
            summary=f"waiting until {when.isoformat()}",
        )


_QUEUED_ENDED = frozenset({"done", "failed", "cancelled", "missed"})
QUEUED_POLL_SECONDS = 0.5


async def _wait_here(input: WaitTaskInput, ctx: ToolContext) -> WaitTaskOutput:
    """Wait inside the run: subagents through the runtime, queued tasks by their recorded status."""
    import anyio

    ids = list(dict.fromkeys(input.task_ids or []))
    agents = ctx.subagents
    children = [t for t in ids if agents is not None and agents.owns(ctx.session_id, t)]
    queued = [t for t in ids if t not in children]
    for task_id in queued:
        if ctx.durable is None or ctx.durable.tasks.task(task_id, by="model", agent=ctx.agent_id) is None:
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"No subagent of this run and no queued task has the id {task_id[:120]!r}.",
                next_action_hint="Use the task ids spawn_agents or tasks returned; subagent_list lists this run's.",
            )
    if not ids:
        if agents is None:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                "There is nothing to wait for.",
                next_action_hint="Give task_ids, or (in a queued task's run) 'until' or 'for_task'.",
            )
        children = [c["task_id"] for c in agents.children(ctx.session_id)]
        if not children:
            raise ToolError(ErrorType.INVALID_INPUT, "This run has no subagents to wait for; give task_ids.")
    deadline = anyio.current_time() + input.timeout_seconds
    while True:
        ended: list[dict[str, Any]] = []
        pending: list[str] = []
        left = max(deadline - anyio.current_time(), 0.0)
        if children:
            # With queued tasks to watch too, wake up now and then to look at them.
            slice_ = min(left, QUEUED_POLL_SECONDS) if queued else left
            done, running = await agents.wait(  # type: ignore[union-attr]
                ctx.session_id, children, within=slice_, mode=input.mode if not queued else "any"
            )
            ended += done
            pending += running
        for task_id in queued:
            found = ctx.durable.tasks.task(task_id, by="model", agent=ctx.agent_id) if ctx.durable else None
            status = str(found["status"]) if found else "failed"
            if status in _QUEUED_ENDED:
                ended.append({"task_id": task_id, "status": status, "output": (found or {}).get("result")})
            else:
                pending.append(task_id)
        satisfied = not pending if input.mode == "all" else bool(ended)
        if satisfied or anyio.current_time() >= deadline:
            summary = f"{len(ended)} ended, {len(pending)} still running"
            return WaitTaskOutput(task_status="waited", summary=summary, ended=ended, pending=pending)
        if not children:
            await anyio.sleep(min(QUEUED_POLL_SECONDS, max(deadline - anyio.current_time(), 0.0)))


def _when(text: str) -> datetime:
    from toolrig.durable.schedule import MAX_AHEAD, ScheduleError, check_instant

    now = datetime.now(UTC)
    try:
        match = _RELATIVE.match(text.strip())
        if match:
            delta = timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
            return check_instant(now + min(delta, MAX_AHEAD + timedelta(days=1)), now, text)
        when = datetime.fromisoformat(text.strip())
        return check_instant(when if when.tzinfo else when.replace(tzinfo=UTC), now, text)
    except ScheduleError as exc:
        raise ToolError(
            ErrorType.INVALID_INPUT, str(exc), next_action_hint="Give a time at most 100 years from now."
        ) from None
    except ValueError:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{text!r} is not a time.",
            next_action_hint="Give an ISO 8601 time such as '2026-05-01T09:00' or '+30s', '+20m', '+2h', '+1d'.",
        ) from None


TOOLS = [Tasks(), CompleteTask(), FailTask(), WaitTask()]
