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
            found = tasks.task(input.id)
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
    description = "End this task's run as failed, saying why it cannot be done. Call it last."

    def execute(self, input: FailTaskInput, ctx: ToolContext) -> FailTaskOutput:
        return FailTaskOutput(task_id=_current_task(ctx, self.name), reason=input.reason)


class WaitTaskInput(ToolInput):
    until: str | None = Field(
        default=None,
        max_length=64,
        description="Resume at this time: ISO 8601 ('2026-05-01T09:00', naive is UTC) or '+30s', '+20m', '+2h', '+1d'.",
    )
    for_task: str | None = Field(default=None, max_length=120, description="Resume when this other task has ended.")


class WaitTaskOutput(ToolOutput):
    task_status: Literal["waiting"] = "waiting"
    task_id: str
    until: str | None = None
    until_epoch: float | None = None
    for_task: str | None = None
    summary: str


class WaitTask(Tool[WaitTaskInput, WaitTaskOutput]):
    name = "wait_task"
    group = "tasks"
    terminal = True
    description = (
        "Pause this task's run and resume it later in the same conversation: at a time ('until') or when another "
        "task ends ('for_task'). Give exactly one. Call it last."
    )

    def execute(self, input: WaitTaskInput, ctx: ToolContext) -> WaitTaskOutput:
        task_id = _current_task(ctx, self.name)
        if (input.until is None) == (input.for_task is None):
            raise ToolError(ErrorType.INVALID_INPUT, "Give exactly one of 'until' and 'for_task'.")
        if input.for_task is not None:
            if input.for_task == task_id:
                raise ToolError(ErrorType.INVALID_INPUT, "A task cannot wait for itself.")
            if _durable(ctx).tasks.task(input.for_task) is None:
                raise ToolError(ErrorType.NOT_FOUND, f"No task with id {input.for_task!r}.")
            return WaitTaskOutput(task_id=task_id, for_task=input.for_task, summary=f"waiting for {input.for_task}")
        when = _when(input.until or "")
        return WaitTaskOutput(
            task_id=task_id,
            until=when.isoformat(),
            until_epoch=when.timestamp(),
            summary=f"waiting until {when.isoformat()}",
        )


def _when(text: str) -> datetime:
    now = datetime.now(UTC)
    match = _RELATIVE.match(text.strip())
    if match:
        return now + timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{text!r} is not a time.",
            next_action_hint="Give an ISO 8601 time such as '2026-05-01T09:00' or '+30s', '+20m', '+2h', '+1d'.",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


TOOLS = [Tasks(), CompleteTask(), FailTask(), WaitTask()]
