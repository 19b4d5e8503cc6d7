"""``toolrig cron list|add|remove|run|next|history|renew``: the workspace's scheduled agent runs."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolrig.cli import InputError
from toolrig.commands._durable_common import JSON, ROOT, emit, errors, open_access

_JOB_COLUMNS = ("id", "name", "schedule", "source", "enabled", "running", "next_run", "last_status", "prompt_preview")


@click.group("cron")
def command() -> None:
    """Scheduled agent runs: jobs from the config and jobs added at runtime (docs/tasks.md)."""


@command.command("list")
@JSON
@ROOT
def list_jobs(as_json: bool, rig_root: Path) -> None:
    """Every job: schedule, source, whether it is running, its last run."""
    with errors():
        emit(open_access(rig_root).list_jobs(), as_json, _JOB_COLUMNS)


@command.command("add")
@click.argument("name")
@click.argument("schedule")
@click.argument("prompt")
@click.option("--agent", help="The agent profile (agents: in config) the runs use.")
@click.option("--tz", "zone", default="UTC", show_default=True, help="IANA zone for cron lines and naive times.")
@JSON
@ROOT
def add_job(name: str, schedule: str, prompt: str, agent: str | None, zone: str, as_json: bool, rig_root: Path) -> None:
    """Add a job (made by a person: it does not expire)."""
    with errors(checks_input=True):
        book = open_access(rig_root).job_book
        job = book.add(name=name, schedule=schedule, prompt=prompt, by="person", agent=agent, zone=zone)
    if as_json:
        emit(book.view(job), True)
    else:
        click.echo(job["id"])  # as `tasks add` does: the id, for the next command


@command.command("remove")
@click.argument("job_id")
@ROOT
def remove_job(job_id: str, rig_root: Path) -> None:
    """Remove a runtime job (config jobs: edit the config)."""
    with errors():
        job = open_access(rig_root).remove_job(job_id, by="person")
        click.echo(f"removed {job['id']} ({job['name']})")


@command.command("renew")
@click.argument("job_id")
@ROOT
def renew_job(job_id: str, rig_root: Path) -> None:
    """Keep a job a model created: it no longer expires after 7 days."""
    with errors():
        access = open_access(rig_root)
        job = access.job_book.renew(job_id)
        click.echo(f"renewed {job['id']} ({job['name']}): it no longer expires")


@command.command("run")
@click.argument("job_id")
@JSON
@ROOT
def run_job(job_id: str, as_json: bool, rig_root: Path) -> None:
    """Run a job now in this process and print the start of its answer."""
    import anyio

    with errors():
        access = open_access(rig_root)
        result = anyio.run(access.run_job, job_id)
    if as_json:
        emit(result, True)
    else:
        click.echo(f"{result['status']}: {result['answer']}")
    if result["status"] == "failed":
        raise SystemExit(1)


@command.command("history")
@click.argument("job_id")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1, max=1000))
@JSON
@ROOT
def history(job_id: str, limit: int, as_json: bool, rig_root: Path) -> None:
    """A job's firings, newest first: when, how each ended (done, failed, missed, skipped...)."""
    from toolrig.durable.tasks import view

    with errors():
        access = open_access(rig_root)
        rows = [view(t) for t in access.records.tasks(job_id=job_id, limit=limit)]
    emit(rows, as_json, ("id", "status", "created", "ended", "result"))


@command.command("next")
@click.argument("schedule")
@click.option("--from", "start", required=True, help="Count from this ISO 8601 time (naive means --tz).")
@click.option("--tz", "zone", default="UTC", show_default=True, help="IANA zone of the schedule and of --from.")
@click.option("--count", default=5, show_default=True, type=click.IntRange(min=1, max=1000))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of ISO 8601 strings.")
def next_times(schedule: str, start: str, zone: str, count: int, as_json: bool) -> None:
    """The next COUNT fire times of SCHEDULE after --from: how the schedule grammar is checked."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from toolrig.durable.schedule import ScheduleError, check_zone, parse_schedule

    try:
        zone = check_zone(zone)
        try:
            origin = datetime.fromisoformat(start)
        except ValueError:
            raise click.BadParameter(f"{start!r} is not an ISO 8601 time", param_hint="--from") from None
        if origin.tzinfo is None:
            origin = origin.replace(tzinfo=ZoneInfo(zone))
        parsed = parse_schedule(schedule, zone=zone, now=origin)
    except ScheduleError as exc:
        raise InputError(str(exc)) from None
    times = [t.isoformat() for t in parsed.next_times(origin, count)]
    click.echo(json.dumps(times) if as_json else "\n".join(times))
