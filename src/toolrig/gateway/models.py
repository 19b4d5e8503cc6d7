"""The gateway API's requests and responses, one pydantic model each; the OpenAPI document is built from them.

Requests forbid unknown fields and cap every size: a body is input from whoever holds the token.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ID = r"^[A-Za-z0-9_.:-]{1,128}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class StartRun(Strict):
    """Start a run: a new session, or ``session_id`` to continue one (one run per session at a time)."""

    prompt: str = Field(min_length=1, max_length=200_000)
    session_id: str | None = Field(default=None, pattern=ID)
    agent: str | None = Field(default=None, pattern=ID, description="A configured agent (agents: in the config).")


class Question(Open):
    question: str
    header: str = ""
    options: list[dict[str, Any]] = []
    allow_multiple: bool = False
    allow_other_text: bool = False


class Pending(BaseModel):
    """An approval or a question the run waits for; answer it by ``id`` (single use, bound to ``call_id``)."""

    type: Literal["pending"] = "pending"
    id: str
    kind: Literal["approval", "question"]
    call_id: str
    tool: str
    arguments: str = Field(description="The call's arguments exactly as the model sent them (JSON text).")
    subjects: list[str]
    reason: str
    task_id: str | None = Field(description="Set when the call is a subagent's.")
    questions: list[Question]
    suggested: list[str] = Field(
        description="For an approval: the allowlist patterns allow_always saves unless the answer names a pattern."
    )


class RunFailure(BaseModel):
    kind: str
    message: str


class RunInfo(BaseModel):
    id: str
    session_id: str | None
    agent: str | None
    user: str | None = Field(description="Who started it, where several users are configured (None: the operator).")
    prompt: str
    status: str = Field(
        description="running, waiting (for answers), completed, terminal, max_turns, max_tokens, aborted or failed"
    )
    started: float
    events: int = Field(description="How many events the run has sent so far (the last SSE id).")
    error: RunFailure | None
    pending: list[Pending]
    elsewhere: bool = Field(
        default=False,
        description="Run by another server of the workspace: read and answered here, its live events there.",
    )


class RunList(BaseModel):
    runs: list[RunInfo]


class Answer(Strict):
    """A person's answer: a verdict for an approval; ``answers`` (one per question) for a question."""

    verdict: Literal["allow_once", "allow_always", "deny"] = Field(
        default="allow_once",
        description="allow_always saves an allowlist pattern (scoped to the run's agent, as the terminal's "
        "'always'). For a question: allow_once with answers, or deny to skip it.",
    )
    pattern: str | None = Field(
        default=None,
        max_length=500,
        description="With allow_always: the pattern to save instead of the card's suggested ones "
        "(a bare glob is about this tool's subjects, e.g. 'git *').",
    )
    call_id: str | None = Field(default=None, max_length=256, description="The call it answers; refused if another.")
    reason: str = Field(default="", max_length=2000)
    answers: list[Any] | None = Field(default=None, max_length=50)


class Answered(BaseModel):
    id: str
    call_id: str
    verdict: str


class SessionInfo(BaseModel):
    id: str
    title: str
    model: str
    provider: str
    status: str
    created: float
    updated: float
    turns: int
    usage: dict[str, Any]


class SessionList(BaseModel):
    sessions: list[SessionInfo]


class ToolCallRow(BaseModel):
    call_id: str
    turn: int
    name: str
    args: Any
    is_error: bool
    preview: str
    duration_ms: float | None


class SessionDetail(SessionInfo):
    messages: list[dict[str, Any]]
    tool_calls: list[ToolCallRow]


class Notes(BaseModel):
    """A session's todo list and the follow-ups the model suggested last."""

    session_id: str
    todos: list[dict[str, Any]]
    followups: list[str]


class Rows(BaseModel):
    """Rows as ``toolrig tasks list --json``, ``cron list --json`` or ``audit --json`` print them."""

    rows: list[dict[str, Any]]


class ErrorBody(BaseModel):
    error: str


class TurnChanges(BaseModel):
    """One turn of a session that changed files (its subagents' changes included)."""

    turn: int
    files: list[str] = Field(description="The files the file tools changed in this turn (restorable).")
    agents: list[str | None] = Field(description="Whose changes: null is the session's agent, others subagents.")
    commands_changed: list[str] = Field(description="Files commands changed: listed, never restored by a rewind.")


class Turns(BaseModel):
    session_id: str
    running: bool = Field(description="A run is going on this session: a rewind waits until it ends.")
    turns: list[TurnChanges]


class Rewind(Strict):
    """Rewind a session's files to before ``turn`` (0: its start). A dry run unless ``dry_run`` is false."""

    turn: int = Field(ge=0, le=1_000_000_000, strict=True)
    dry_run: bool = Field(default=True, strict=True, description="Say what would change; change nothing.")
    force: bool = Field(
        default=False, strict=True, description="Put back files changed since as well (overwrites a person's edit)."
    )


class FileNote(BaseModel):
    path: str
    reason: str


class RewindResult(BaseModel):
    """What a rewind did (``done``), or would do; a refused one (409) names the files in ``conflicts``/``not_kept``."""

    session_id: str
    to_turn: int
    dry_run: bool
    forced: bool
    done: bool
    would_refuse: bool = Field(description="Without force, files changed since (or not kept) refuse it.")
    restored: list[str]
    removed: list[str]
    unchanged: list[str]
    conflicts: list[FileNote] = Field(description="Files changed since the agent last wrote them.")
    not_kept: list[FileNote] = Field(description="Files whose earlier content was not kept: never restorable.")
    changed_by_commands: list[str] = Field(description="Files commands changed: not restorable.")
    commands_fully_checked: bool
    error: str | None = Field(default=None, description="Set on a refusal: why, with the files named.")
