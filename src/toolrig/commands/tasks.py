"""``toolrig tasks add|list|show|cancel|approve``: queued agent runs and their outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolrig.commands._durable_common import JSON, ROOT, emit, errors, open_access


@click.group("tasks")
def command() -> None:
    """Queued agent runs, run by `toolrig worker` (docs/tasks.md)."""


@command.command("add")
@click.argument("prompt")
@click.option("--agent", help="The agent profile (agents: in config) the run uses.")
@click.option("--after", help="Not before this time: ISO 8601 (naive is UTC) or +30s, +20m, +2h.")
@click.option("--retries", default=0, show_default=True, type=click.IntRange(0, 10), help="Retries after a failure.")
@JSON
@ROOT
def add_task(prompt: str, agent: str | None, after: str | None, retries: int, as_json: bool, rig_root: Path) -> None:
    """Queue PROMPT for a worker."""
    with errors(checks_input=True):
        task = open_access(rig_root).task_book.add(
            prompt=prompt, by="person", agent=agent, after=after, retries=retries
        )
    if as_json:
        emit({"id": task["id"], "status": task["status"]}, True)
    else:
        click.echo(task["id"])


@command.command("list")
@click.option("--status", help="Only tasks with this status (queued, running, waiting, paused, done, failed...).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1, max=10_000))
@JSON
@ROOT
def list_tasks(status: str | None, limit: int, as_json: bool, rig_root: Path) -> None:
    """Tasks, newest first."""
    from toolrig.durable.tasks import view

    with errors():
        rows = [view(t) for t in open_access(rig_root).records.tasks(status=status, limit=limit)]
    if not as_json:
        rows = [row | {"runs": _runs(row)} for row in rows]
    emit(rows, as_json, ("id", "status", "runs", "kind", "attempt", "created", "result", "prompt", "resumes"))


def _runs(row: dict[str, Any]) -> str:
    """When the task runs (or ran): a queued one's start, a running one's since, an ended one's end."""
    if row["status"] == "queued":
        return f"at {row['not_before']}" if row["not_before"] else "next free worker"
    if row["status"] == "running" and row["started"]:
        return f"since {row['started']}"
    return f"ended {row['ended']}" if row["ended"] else "-"


@command.command("show")
@click.argument("task_id")
@ROOT
def show_task(task_id: str, rig_root: Path) -> None:
    """One task in full, with the approvals a paused run waits for."""
    from toolrig.durable.tasks import view

    with errors():
        emit(view(open_access(rig_root).task_book.get(task_id), full=True), True)


@command.command("cancel")
@click.argument("task_id")
@ROOT
def cancel_task(task_id: str, rig_root: Path) -> None:
    """Cancel a task that has not ended; a running attempt stops at its next step."""
    with errors():
        open_access(rig_root).task_book.cancel(task_id)
    click.echo(f"cancelled {task_id}")


@command.command("approve")
@click.argument("task_id")
@click.option("--deny", is_flag=True, help="Refuse the pending calls instead (the run goes on without them).")
@click.option("--note", default="", help="Told to the model with the decision.")
@ROOT
def approve_task(task_id: str, deny: bool, note: str, rig_root: Path) -> None:
    """Answer the approvals a paused task waits for; a worker resumes it."""
    with errors():
        open_access(rig_root).task_book.approve(task_id, deny=deny, note=note)
    click.echo(f"{'denied' if deny else 'approved'}: {task_id} is queued again")
