"""Talking with the person the agent works for: a visible todo list and suggested next steps.

Both are kept with the session (``stores.notes``), so a resumed or paused run finds them again, and both
are events a front end renders (``toolrig chat`` live, ``toolrig run --json`` as lines).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.events import FollowupsEvent, TodosEvent

Status = Literal["pending", "in_progress", "completed", "cancelled"]


class Todo(ToolInput):
    task: str = Field(min_length=1, max_length=500, description="What to do, as a short imperative sentence.")
    status: Status = Field(default="pending", description="pending, in_progress (at most one), completed, cancelled.")

    @model_validator(mode="before")
    @classmethod
    def _seed_spelling(cls, data: Any) -> Any:
        # Codebuff's agents write {task, completed: bool}; it means the same list.
        if isinstance(data, dict) and "completed" in data and "status" not in data:
            completed = data["completed"]
            data = {k: v for k, v in data.items() if k != "completed"}
            data["status"] = "completed" if completed is True else "pending"
        return data


class WriteTodosInput(ToolInput):
    todos: list[Todo] = Field(max_length=50, description="The whole list, in order; it replaces the previous one.")


class WriteTodosOutput(ToolOutput):
    todos: list[Todo]
    summary: str


class WriteTodos(Tool[WriteTodosInput, WriteTodosOutput]):
    name = "write_todos"
    group = "interact"
    description = (
        "Keep a visible todo list for multi-step work: send the whole list each time (it replaces the last one), "
        "with at most one task in_progress. Update it as you finish tasks so the user sees where you are."
    )

    def execute(self, input: WriteTodosInput, ctx: ToolContext) -> WriteTodosOutput:
        active = [t.task for t in input.todos if t.status == "in_progress"]
        if len(active) > 1:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"{len(active)} tasks are in_progress; at most one may be.",
                "Mark the others pending (or completed) and send the whole list again.",
            )
        todos = [t.model_dump() for t in input.todos]
        ctx.stores.notes.put(ctx.session_id, "todos", todos)
        ctx.events.emit(TodosEvent(ctx.session_id, todos))
        done = sum(t.status == "completed" for t in input.todos)
        summary = f"{done} of {len(input.todos)} completed" + (f"; in progress: {active[0]}" if active else "")
        return WriteTodosOutput(todos=input.todos, summary=summary)


class Followup(ToolInput):
    prompt: str = Field(min_length=1, max_length=300, description="What the user would send to do it.")
    label: str | None = Field(default=None, max_length=80, description="A short label to show instead.")


class SuggestFollowupsInput(ToolInput):
    followups: list[str | Followup] = Field(
        min_length=2, max_length=6, description="2-6 short next steps the user might want, each as a prompt."
    )


class SuggestFollowupsOutput(ToolOutput):
    recorded: int


class SuggestFollowups(Tool[SuggestFollowupsInput, SuggestFollowupsOutput]):
    name = "suggest_followups"
    group = "interact"
    description = (
        "Suggest 2-6 short next steps after your answer; the user can pick one by its number. Use it at the end of "
        "a task, not instead of answering."
    )

    def execute(self, input: SuggestFollowupsInput, ctx: ToolContext) -> SuggestFollowupsOutput:
        texts = [f if isinstance(f, str) else (f.label or f.prompt) for f in input.followups]
        if any(not t.strip() or len(t) > 300 for t in texts):
            raise ToolError(ErrorType.INVALID_INPUT, "Each follow-up must be 1-300 characters of text.")
        ctx.stores.notes.put(ctx.session_id, "followups", texts)
        ctx.events.emit(FollowupsEvent(ctx.session_id, texts))
        return SuggestFollowupsOutput(recorded=len(texts))


TOOLS = [WriteTodos(), SuggestFollowups()]
