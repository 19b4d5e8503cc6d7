"""The ``cron`` tool: an agent schedules its own reminders and recurring runs (the seed's contract).

Trust model: names, schedules and prompts are the model's. Jobs it creates expire after seven days unless
a person renews them, count against a cap, and config jobs (the trusted config's) are read-only to it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.durable.api import Durable, DurableError
from toolrig.errors import ErrorType, ToolError


def durable_of(ctx: ToolContext) -> Durable:
    if ctx.durable is None:
        raise ToolError(
            ErrorType.UNAVAILABLE,
            "Schedules and tasks are not available here.",
            next_action_hint="Run inside a toolrig workspace (Rig) to use them.",
        )
    return ctx.durable


class CronInput(ToolInput):
    action: Literal["list", "add", "remove", "run"] = Field(
        description="list: show the jobs that run as you; add: create a job (schedule, prompt; name and id "
        "optional); "
        "remove: delete a job (id); run: run a job now (id) and get the start of its answer."
    )
    id: str | None = Field(
        default=None, max_length=64, description="The job id, for remove and run; for add, the new job's id (optional)."
    )
    name: str | None = Field(
        default=None, max_length=200, description="A short name for the new job (add; default: its id)."
    )
    schedule: str | None = Field(
        default=None,
        max_length=200,
        description="When it runs (add): '30s', '15m', '2h', '1d' (every N); a 5-field cron line with an optional "
        "IANA zone, e.g. '0 9 * * 1-5 Europe/Paris'; '+20m' or '+2h' (once, from now); or an ISO 8601 time "
        "(once). One-time jobs delete themselves after they run.",
    )
    prompt: str | None = Field(
        default=None, max_length=20_000, description="What the agent is asked each time the job runs (add)."
    )


class CronOutput(ToolOutput):
    action: str
    jobs: list[dict[str, Any]] | None = Field(
        default=None,
        description="list: id, name, schedule, source (config | runtime), enabled, running, last run and status, "
        "prompt preview.",
    )
    job: dict[str, Any] | None = Field(default=None, description="The job added or removed.")
    answer: str | None = Field(default=None, description="run: the first 500 characters of the job's answer.")
    status: str | None = Field(default=None, description="run: how the run ended (done, failed, paused...).")
    note: str | None = None


def _need(value: str | None, field: str, action: str) -> str:
    if value is None or not value.strip():
        raise ToolError(ErrorType.INVALID_INPUT, f"The '{action}' action needs '{field}'.")
    return value


def _added(job: dict[str, Any]) -> str:
    """What the model needs to know of the job it just added: once or repeating, when, and its expiry."""
    if job.get("one_shot"):
        kind = f"One-shot job {job['id']!r}: it runs once, at {job.get('next_run')}, then deletes itself."
    else:
        kind = f"Repeating job {job['id']!r} ({job['schedule']}): first run at {job.get('next_run')}."
    return f"{kind} It expires in 7 days unless a person renews it."


class Cron(Tool[CronInput, CronOutput]):
    name = "cron"
    group = "cron"
    description = (
        "Schedule agent runs for later or on a recurring basis. Actions: 'list' shows the jobs that run as you; "
        "'add' creates one from schedule and prompt (name and id optional); 'remove' deletes one by id; "
        "'run' runs one now and returns the start of its answer. Each run is a fresh agent session given the "
        "job's prompt, so write the prompt to stand on its own. Jobs you add expire after 7 days unless a person "
        "renews them; jobs from the configuration cannot be removed here."
    )

    async def execute(self, input: CronInput, ctx: ToolContext) -> CronOutput:
        import anyio.to_thread

        schedules = durable_of(ctx).schedules
        try:
            if input.action == "list":
                jobs = await anyio.to_thread.run_sync(lambda: schedules.list_jobs(by="model", agent=ctx.agent_id))
                return CronOutput(action="list", jobs=jobs, note=None if jobs else "No job runs as you.")
            if input.action == "add":
                schedule = _need(input.schedule, "schedule", "add")
                prompt = _need(input.prompt, "prompt", "add")
                # The job runs as the agent that created it: scheduling must not widen its permissions.
                job = await anyio.to_thread.run_sync(
                    lambda: schedules.add_job(
                        name=input.name,
                        schedule=schedule,
                        prompt=prompt,
                        by="model",
                        agent=ctx.agent_id,
                        job_id=input.id,
                    )
                )
                return CronOutput(action="add", job=job, note=_added(job))
            job_id = _need(input.id, "id", input.action)
            if input.action == "remove":
                job = await anyio.to_thread.run_sync(
                    lambda: schedules.remove_job(job_id, by="model", agent=ctx.agent_id)
                )
                return CronOutput(action="remove", job=job)
            ran = await schedules.run_job(job_id, by="model", agent=ctx.agent_id)
            return CronOutput(
                action="run",
                job={"id": ran["id"], "task_id": ran["task_id"]},
                answer=ran["answer"],
                status=ran["status"],
                note="The answer was cut at 500 characters." if ran["truncated"] else None,
            )
        except DurableError as exc:
            raise exc.tool_error() from None

    def subjects(self, input: CronInput) -> list[str]:
        return [f"{input.action}:{input.id or input.name or ''}"]


TOOLS = [Cron()]
