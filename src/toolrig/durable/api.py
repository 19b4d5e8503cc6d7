"""What a tool may ask of the durable layer, as protocols: tools import these, never the implementation.

``DurableError`` carries a stable kind so a tool turns it into the matching ``ToolError`` and the CLI into a
message and a non-zero exit.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from toolrig.errors import ErrorType, ToolError

ErrorKind = Literal["invalid", "not_found", "forbidden", "limit", "no_task", "unavailable"]


class DurableError(Exception):
    def __init__(self, kind: ErrorKind, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.hint = hint

    def tool_error(self) -> ToolError:
        """The same refusal as a tool's error result (the cron and tasks tools raise it)."""
        return ToolError(_TOOL_ERRORS[self.kind], self.message, next_action_hint=self.hint or None)


_TOOL_ERRORS: dict[str, ErrorType] = {
    "invalid": ErrorType.INVALID_INPUT,
    "not_found": ErrorType.NOT_FOUND,
    "forbidden": ErrorType.DENIED,
    "limit": ErrorType.CONFLICT,
    "no_task": ErrorType.INVALID_INPUT,
    "unavailable": ErrorType.UNAVAILABLE,
}


class Schedules(Protocol):
    def list_jobs(self, *, by: str = "person", agent: str | None = None) -> list[dict[str, Any]]: ...

    def add_job(
        self,
        *,
        name: str | None,
        schedule: str,
        prompt: str,
        by: str,
        agent: str | None = None,
        job_id: str | None = None,
    ) -> dict[str, Any]: ...

    def remove_job(self, job_id: str, *, by: str, agent: str | None = None) -> dict[str, Any]: ...

    async def run_job(self, job_id: str, *, by: str = "person", agent: str | None = None) -> dict[str, Any]: ...


class Tasks(Protocol):
    def add_task(
        self, *, prompt: str, by: str, agent: str | None = None, after: str | None = None
    ) -> dict[str, Any]: ...

    def current_task(self) -> str | None: ...

    def task(self, task_id: str, *, by: str = "person", agent: str | None = None) -> dict[str, Any] | None: ...


class Durable(Protocol):
    """The capability on ``ToolContext.durable``: schedules and tasks of this workspace."""

    @property
    def schedules(self) -> Schedules: ...

    @property
    def tasks(self) -> Tasks: ...
