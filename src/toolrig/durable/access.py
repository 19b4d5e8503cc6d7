"""``ToolContext.durable``: one workspace's schedules and tasks, opened on first use.

Creating it costs nothing (no database, no engine): ``toolrig call`` and the MCP server pay only when a tool
touches a schedule or a task. ``task_id`` is set when the access serves a durable run, so the terminal tools
know which task they end.

Running a job now (``cron run``) is an agent run, which sits above this package: whoever builds the access
above the agent runtime hands it ``runner`` (``toolrig.workers.run_inline``). A Rig built from Python without
one (``run_agent``'s default Rig, a library's own) finds the installed runtime through the ``toolrig.runtime``
entry point that toolrig's own package declares, the way the catalog finds tool plugins: the dependency is
declared in packaging, not imported from below. Only where neither exists is that action unavailable.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrig.durable.api import DurableError
from toolrig.trace_context import current_carrier, state, wanted

if TYPE_CHECKING:
    from toolrig.config import Config, WorkersConfig
    from toolrig.durable.jobs import JobBook
    from toolrig.durable.store import Records
    from toolrig.durable.tasks import TaskBook

RUN_ANSWER_CHARS = 500

# Runs a queued task now, in this process, and answers its row once it ended (``toolrig.workers.run_inline``).
TaskRunner = Callable[["DurableAccess", str], Awaitable[dict[str, Any]]]


def database_url(settings: WorkersConfig, state_dir: Path) -> str:
    from toolrig.durable.store import sqlite_url

    return settings.database_url or sqlite_url(state_dir)


class DurableAccess:
    def __init__(
        self,
        root: Path,
        config: Config,
        state_dir: Path,
        *,
        task_id: str | None = None,
        runner: TaskRunner | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.state_dir = state_dir
        self.task_id = task_id
        self.runner = runner
        # The agents a later run can be: the configured ones (a subagent's id names none: its profile lives on
        # its own view for the child's lifetime only).
        self.configured_agents = frozenset(config.agents)
        self._records: Records | None = None
        self._jobs: JobBook | None = None
        self._tasks: TaskBook | None = None
        self._owns_records = True

    def bound(self, task_id: str) -> DurableAccess:
        """The same workspace, serving the run of ``task_id`` (on this one's records: closing it closes neither)."""
        other = DurableAccess(self.root, self.config, self.state_dir, task_id=task_id, runner=self.runner)
        other._records, other._jobs, other._tasks = self.records, self._jobs, self._tasks
        other.configured_agents = self.configured_agents
        other._owns_records = False
        return other

    def close(self) -> None:
        """Let go of the database (``Rig.close``); it opens again on next use."""
        records, self._records, self._jobs, self._tasks = self._records, None, None, None
        if records is not None and self._owns_records:
            records.close()

    # The protocol's two faces are this one object.
    @property
    def schedules(self) -> DurableAccess:
        return self

    @property
    def tasks(self) -> DurableAccess:
        return self

    @property
    def records(self) -> Records:
        if self._records is None:
            from toolrig.durable.store import Records

            self._records = Records(database_url(self.config.workers, self.state_dir))
        return self._records

    @property
    def job_book(self) -> JobBook:
        if self._jobs is None:
            from toolrig.durable.jobs import JobBook

            book = JobBook(self.records, self.config.workers)
            book.sync_config(self.config.cron)
            self._jobs = book
        return self._jobs

    @property
    def task_book(self) -> TaskBook:
        if self._tasks is None:
            from toolrig.durable.tasks import TaskBook

            self._tasks = TaskBook(self.records)
        return self._tasks

    # ------------------------------------------------------------------ Schedules

    def list_jobs(self, *, by: str = "person", agent: str | None = None) -> list[dict[str, Any]]:
        """Every live job for a person; for a model, only the jobs that run as its agent (those it may run).

        Another agent's jobs are that profile's work: their prompts and outcomes are not this model's to read.
        """
        book = self.job_book
        return [book.view(job) for job in book.live() if by != "model" or job["agent"] == agent]

    def add_job(
        self,
        *,
        name: str | None,
        schedule: str,
        prompt: str,
        by: str,
        agent: str | None = None,
        job_id: str | None = None,
    ) -> dict[str, Any]:
        self._runnable(agent)
        book = self.job_book
        job = book.add(name=name, schedule=schedule, prompt=prompt, by=by, agent=agent, job_id=job_id)
        return {**book.view(job), "one_shot": bool(job["one_shot"])}

    def remove_job(self, job_id: str, *, by: str, agent: str | None = None) -> dict[str, Any]:
        book = self.job_book
        if by == "model":
            _own(book.get(job_id), agent, "remove")
        return book.view(book.remove(job_id, by=by))

    async def run_job(self, job_id: str, *, by: str = "person", agent: str | None = None) -> dict[str, Any]:
        """Run a job now, in this process, as its own recorded firing; the answer's first 500 characters.

        A model (``by="model"``) may run only its own agent's jobs: a job runs under its agent's profile, so
        running another's would lend the caller that profile's permissions (and hand it the answer).
        """
        job = self.job_book.get(job_id)
        if by == "model":
            _own(job, agent, "run")
        self.require_trusted(f"Running job {job_id!r}", model=by == "model")
        run_inline = self.runner or _installed_runner()
        if run_inline is None:
            raise DurableError(
                "unavailable",
                f"Job {job_id!r} cannot run now here: this rig was built without the agent runtime that runs jobs.",
                f"A worker runs it at its time (toolrig worker); a person can run it now: toolrig cron run {job_id}.",
            )
        now = time.time()
        task_id = f"{job['id']}@now-{int(now * 1000)}"
        self.records.insert_task(
            {
                "id": task_id,
                "kind": "cron",
                "job_id": job["id"],
                "prompt": job["prompt"],
                "agent": job["agent"],
                "status": "queued",
                "created_at": now,
                "not_before": now,
                "fire_time": now,
                "attempt": 1,
                "retries_left": 0,
                "created_by": by,
            }
        )
        task = await run_inline(self, task_id)
        answer = task["result"] or ""
        return {
            "id": job["id"],
            "task_id": task_id,
            "status": task["status"],
            "answer": answer[:RUN_ANSWER_CHARS],
            "truncated": len(answer) > RUN_ANSWER_CHARS,
        }

    def require_trusted(self, action: str, *, model: bool = False) -> None:
        """Refuse to run work from the workspace's own database until the person has trusted the workspace.

        That database is a file in the workspace's state directory, so a repository can commit one holding
        tasks and jobs of its choosing; running them would make its prompts the user's turns. The same rule
        keeps an untrusted workspace's ``workers:`` and ``cron:`` config from taking effect. A database that
        the user's own config names (``workers.database_url``, trusted-only) is the user's, and needs no trust.
        """
        from toolrig.config import is_trusted

        if self.config.workers.database_url or is_trusted(self.root):
            return
        review = "`toolrig tasks list` and `toolrig cron list`"
        raise DurableError(
            "forbidden",
            f"{action} is refused: this workspace is not trusted, and its schedules and tasks live in its own "
            "database, which a repository can commit with work of its choosing.",
            f"Ask the person to review {review}, then run `toolrig trust` in {self.root}."
            if model
            else f"Review them with {review}, then run `toolrig trust` in {self.root} and try again.",
        )

    def _runnable(self, agent: str | None) -> None:
        """Refuse work queued for an agent no later run can be (a subagent's id lives only while the child runs).

        Such a task would be accepted now and fail when a worker takes it: the answer would be a lie.
        """
        if agent is not None and agent not in self.configured_agents:
            raise DurableError(
                "forbidden",
                f"Work queued as {agent!r} could never run: that agent exists only for this run (a subagent).",
                "Do the work now, or report it to the agent that started you so it can queue it.",
            )

    # ------------------------------------------------------------------ Tasks

    def add_task(self, *, prompt: str, by: str, agent: str | None = None, after: str | None = None) -> dict[str, Any]:
        self._runnable(agent)
        task = self.task_book.add(prompt=prompt, by=by, agent=agent, after=after, parent_id=self.task_id)
        return self._remember_trace(task)

    def _remember_trace(self, task: dict[str, Any]) -> dict[str, Any]:
        """A task just queued: keep the trace it was queued under (telemetry on), so that its run continues it."""
        if state.on and wanted(self.config.telemetry):
            carrier = current_carrier()
            if carrier:
                from toolrig.durable.traces import remember

                remember(self.records, task["id"], carrier)
        return task

    def current_task(self) -> str | None:
        return self.task_id

    def task(self, task_id: str, *, by: str = "person", agent: str | None = None) -> dict[str, Any] | None:
        """A task, or None; for a model, only a task that runs as its agent (another's is not found, not refused).

        Another agent's task is that profile's work: its prompt and result are not this model's to read, and
        whether an id exists is not either (a firing's id can be worked out from its job and time).
        """
        try:
            found = self.task_book.get(task_id)
        except DurableError:
            return None
        if found is not None and by == "model" and found["agent"] != agent:
            return None
        return found


def _own(job: dict[str, Any], agent: str | None, action: str) -> None:
    """Refuse a model's ``action`` on a job that runs under another agent's profile than the caller's."""
    if job["agent"] != agent:  # its name and agent are that profile's, as its prompt is: not said
        raise DurableError(
            "forbidden",
            f"Job {job['id']!r} does not run as you; you may {action} only the jobs that do (cron list shows them).",
            f"Ask a person to {action} it: toolrig cron {action} {job['id']}.",
        )


RUNTIME_GROUP = "toolrig.runtime"  # entry points; ``task_runner`` is the installed TaskRunner


def _installed_runner() -> TaskRunner | None:
    """The agent runtime's task runner as the installed toolrig declares it (None: not installed as a package)."""
    from importlib.metadata import entry_points

    for point in entry_points(group=RUNTIME_GROUP, name="task_runner"):
        runner: TaskRunner = point.load()
        return runner
    return None
