"""Talking with the person the agent works for: questions, a visible todo list and suggested next steps.

``ask_user`` goes through ``ctx.approvals`` (the same broker and channels as approvals: a terminal list,
MCP elicitation, Telegram, a paused run); nobody answering in time is ``skipped: true``, never a hang.
Todos and follow-ups are kept with the session (``stores.notes``), so a resumed or paused run finds them
again, and both are events a front end renders (``toolrig chat`` live, ``toolrig run --json`` as lines).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.events import FollowupsEvent, TodosEvent
from toolrig.forms import FormError, check_form

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
    read_only = True  # it changes only this session's own list, which the person sees: asking would be noise
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
    read_only = True  # it only shows the person suggestions; nothing runs until they pick one
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


class Option(ToolInput):
    label: str = Field(min_length=1, max_length=200, description="What the user picks; short.")
    description: str | None = Field(default=None, max_length=500, description="What picking it means.")


class Question(ToolInput):
    question: str = Field(min_length=1, max_length=2_000, description="The question, as one clear sentence.")
    header: str | None = Field(default=None, max_length=60, description="A short title shown above it.")
    options: list[Option] | None = Field(
        default=None, max_length=12, description="Choices to pick from; omit for a free-text answer."
    )
    allow_multiple: bool = Field(default=False, description="The user may pick several options.")
    allow_other_text: bool = Field(default=False, description="The user may also type their own answer.")
    form: dict[str, Any] | None = Field(
        default=None,
        description=(
            "A form to fill in instead of options: a flat JSON Schema object whose properties are string, number, "
            "integer, boolean or enum fields (enum, oneOf, or an array of enum items), each with an optional "
            "default. The answer comes back as values."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _seed_spelling(cls, data: Any) -> Any:
        # Codebuff's agents write options as plain strings and camelCase flags; they mean the same question.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for theirs, ours in (("allowMultipleOptions", "allow_multiple"), ("allowOtherText", "allow_other_text")):
            if theirs in data and ours not in data:
                data[ours] = data.pop(theirs)
        if isinstance(data.get("options"), list):
            data["options"] = [{"label": o} if isinstance(o, str) else o for o in data["options"]]
        return data

    @model_validator(mode="after")
    def _distinct_labels(self) -> Question:
        labels = [o.label for o in self.options or ()]
        if len(set(labels)) != len(labels):
            raise ValueError("option labels must be distinct (the answer names options by label)")
        if self.form is not None:
            if self.options or self.allow_multiple or self.allow_other_text:
                raise ValueError("a question has either a form or options, not both")
            try:
                self.form = check_form(self.form)
            except FormError as exc:
                raise ValueError(f"form: {exc}") from None
        return self


class AskUserInput(ToolInput):
    questions: list[Question] = Field(min_length=1, max_length=8, description="What to ask, in order.")


class Answer(ToolOutput):
    selected: list[str] | None = Field(default=None, description="The labels the user picked.")
    other_text: str | None = Field(default=None, description="What the user typed.")
    values: dict[str, Any] | None = Field(
        default=None,
        description="The filled-in form, field by field.",
        exclude_if=lambda v: v is None,  # only form questions have values: other answers keep their shape
    )


class AskUserOutput(ToolOutput):
    answers: list[Answer]
    skipped: bool = Field(description="True when nobody answered (no one reachable in time, or they skipped).")


class AskUser(Tool[AskUserInput, AskUserOutput]):
    name = "ask_user"
    group = "interact"
    read_only = True  # it changes nothing; the person is asked through the question itself, not an approval
    sequential = True  # one question at a time: parallel calls would interleave on the person's screen
    description = (
        "Ask the user questions when you cannot go on without their choice: give options to pick from "
        "(allow_multiple for several, allow_other_text for their own words), no options for a free answer, or a "
        "form of typed fields with defaults. "
        "The answer may be skipped (skipped: true): then decide yourself and say what you assumed."
    )

    async def execute(self, input: AskUserInput, ctx: ToolContext) -> AskUserOutput:
        questions = [q.model_dump(exclude_none=True) for q in input.questions]
        replies = await ctx.approvals.ask_user(
            questions, call_id=ctx.call_id, session_id=ctx.session_id, agent_id=ctx.agent_id, events=ctx.events
        )
        if replies is None:
            return AskUserOutput(answers=[Answer() for _ in input.questions], skipped=True)
        return AskUserOutput(answers=[Answer.model_validate(r) for r in replies], skipped=False)


TOOLS = [AskUser(), WriteTodos(), SuggestFollowups()]
