"""One attempt of a task: an agent run whose turns and tool calls go through the step journal.

Called by the engine's workflow (a worker thread, its own event loop) or inline by ``cron run``. The task row
says how the attempt starts: fresh, continuing its session after ``wait_task``, or resuming a run paused
for approvals with a person's decisions. The run's end (answer, terminal tool, pause, failure) becomes the
task's next status, written only while the task is still ``running`` so a cancel in between wins.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from toolrig.durable.api import DurableError
from toolrig.durable.store import Cancelled
from toolrig.errors import ConfigError, UsageError
from toolrig.telemetry import continues_task_trace
from toolrig.workers.journal import Journal

if TYPE_CHECKING:
    from toolrig.agent.providers import Provider, ProviderSettings
    from toolrig.agent.state import RunResult
    from toolrig.durable.access import DurableAccess
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.durable")

RESUMED = (
    "You are resuming this task after waiting ({why}). Continue it; end with complete_task, fail_task or wait_task."
)
RETRY_BACKOFF_SECONDS = 5.0

T = TypeVar("T")
RigFactory = Callable[[Path, "str | None"], "Rig"]
_rig_factory: RigFactory | None = None


def set_rig_factory(factory: RigFactory | None) -> None:
    """Tests and embedding programs build the Rig a run uses (their own tools, a scripted provider)."""
    global _rig_factory
    _rig_factory = factory


def _make_rig(root: Path, agent: str | None) -> Rig:
    if _rig_factory is not None:
        return _rig_factory(root, agent)
    from toolrig.rig import Rig

    return Rig(root, agent=agent, durable_runner=run_inline)


class RigSource(Protocol):
    """Where an attempt gets its Rig and model: a worker's host keeps them across tasks (``workers.host``)."""

    def rig(self, agent: str | None) -> Rig: ...

    def provider(self, rig: Rig) -> Provider: ...


class _CheckedJournal(Journal):
    def __init__(
        self, access: DurableAccess, run_id: str, task_id: str, recorded: dict[str, tuple[str, Any]] | None = None
    ) -> None:
        super().__init__(access.records, run_id, task_id=task_id, recorded=recorded)


async def _db(fn: Callable[..., T], *args: Any) -> T:
    """A database call in a worker thread: the runs sharing a worker's event loop never wait on one."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(fn, *args)


@continues_task_trace  # telemetry: the attempt runs in the trace that queued the task (nothing when off)
async def run_attempt(
    access: DurableAccess, task_id: str, workflow_id: str, worker: str, *, rigs: RigSource | None = None
) -> dict[str, Any] | None:
    """Run the attempt ``workflow_id`` of ``task_id``; None when the task is no longer this attempt's to run.

    ``rigs`` (a worker's host) lends the Rig and the provider and keeps them; without it the attempt builds
    its own and closes them (``cron run``).
    """
    records = access.records
    claimed, task, recorded = await _db(records.open_attempt, task_id, workflow_id, worker, time.time())
    # A replay after a crash finds its own attempt already running: carry on from the journal.
    if task is None or (not claimed and (task["status"] != "running" or task["workflow_id"] != workflow_id)):
        return None
    try:
        rig = rigs.rig(task["agent"]) if rigs is not None else _make_rig(access.root, task["agent"])
    except (UsageError, ConfigError) as exc:
        # The agent it runs as is gone (a subagent's, which lives only as long as the child; one removed from
        # the config): the task cannot run as queued, and no retry changes that. Ended, not left "running".
        return await _db(_failed, access, {**task, "retries_left": 0}, f"config: {exc}")
    try:
        result = await _run(access, task, rig, rigs, _CheckedJournal(access, workflow_id, task_id, recorded))
    except Cancelled:
        return await _db(records.task, task_id)
    except _Failed as exc:
        return await _db(_failed, access, task, exc.message)
    finally:
        if rigs is None:
            await _close(rig)
    return await _db(_ended, access, task, result)


class _Failed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _run(
    access: DurableAccess, task: dict[str, Any], rig: Rig, rigs: RigSource | None, journal: Journal
) -> RunResult:
    from toolrig.agent.entry import resume_run, run_agent
    from toolrig.agent.errors import RunError
    from toolrig.agent.state import RunOptions, RunState
    from toolrig.approvals import ApprovalDecision, Verdict

    # Nobody watches a scheduled task: approvals pause it, ask_user questions are skipped (docs/policy.md).
    # The run's calls reach its own task through the options (the scope), never through the shared Rig.
    options = RunOptions(approvals="pause", questions="skip", steps=journal, durable=access.bound(task["id"]))
    try:
        if rigs is not None:
            options.provider = rigs.provider(rig)
        if task["state"] and task["decisions"]:
            decisions: dict[str, ApprovalDecision | Verdict] = {
                k: ApprovalDecision("allow_once" if v["allow"] else "deny", v.get("note", ""))
                for k, v in json.loads(task["decisions"]).items()
            }
            return await resume_run(RunState.from_json(task["state"]), decisions, options, rig=rig)
        if task["session_id"] and task["attempt"] > 1:
            options.session_id = task["session_id"]
            why = f"until {task['not_before']}" if not task["wait_for"] else f"for task {task['wait_for']}"
            return await run_agent(RESUMED.format(why=why), options, rig=rig)
        return await run_agent(task["prompt"], options, rig=rig)
    except RunError as exc:
        raise _Failed(f"{exc.kind}: {exc.message}") from None


def provider_settings(rig: Rig) -> ProviderSettings:
    """The model a run of ``rig``'s agent asks, as the loop would choose it (its profile's model, else llm's)."""
    from toolrig.agent.providers import settings_from

    own = rig.config.agents.get(rig.agent) if rig.agent is not None else None
    model = own.model if own is not None and own.model != "inherit" else None
    return settings_from(rig.config.llm, model=model)


def _failed(access: DurableAccess, task: dict[str, Any], message: str) -> dict[str, Any] | None:
    now = time.time()
    if task["retries_left"] > 0:
        values: dict[str, Any] = {
            "status": "queued",
            "attempt": task["attempt"] + 1,
            "retries_left": task["retries_left"] - 1,
            "not_before": now + RETRY_BACKOFF_SECONDS * 2 ** (task["attempt"] - 1),
            "workflow_id": None,
            "result": f"attempt {task['attempt']} failed: {message}",
        }
    else:
        values = {"status": "failed", "ended_at": now, "result": message}
    return _finish(access, task, values)


def _ended(access: DurableAccess, task: dict[str, Any], result: RunResult) -> dict[str, Any] | None:
    now = time.time()
    values: dict[str, Any] = {
        "session_id": result.session_id,
        "ended_at": now,
        "status": "done",
        "result": result.response,
    }
    if result.stop_reason == "terminal" and isinstance(result.output, dict) and "task_status" in result.output:
        out = result.output
        status = out["task_status"]
        values["status"] = status
        values["result"] = out.get("summary") or out.get("reason") or result.response
        if status == "waiting":
            values.update(ended_at=None, not_before=out.get("until_epoch") or now, wait_for=out.get("for_task"))
            values["state"] = values["decisions"] = None
    elif result.stop_reason == "paused" and result.state is not None:
        values.update(
            status="paused", ended_at=None, state=result.state.to_json(), decisions=None, result="waiting for approval"
        )
    elif result.stop_reason == "aborted":
        values["status"] = "cancelled"
    if values["status"] != "paused":
        values.setdefault("state", None)
    return _finish(access, task, values)


def _finish(access: DurableAccess, task: dict[str, Any], values: dict[str, Any]) -> dict[str, Any] | None:
    """The attempt's end, written only while the task is still running (a cancel in between wins)."""
    records = access.records
    if not records.set_task(task["id"], where_status=("running",), **values):
        return records.task(task["id"])
    if values["status"] in ("done", "failed", "cancelled"):
        _after_firing(access, task)
    return {**task, **values}


def _after_firing(access: DurableAccess, task: dict[str, Any]) -> None:
    """A one-shot job deletes itself once its firing ran."""
    if task["job_id"]:
        job = access.records.job(task["job_id"])
        if job is not None and job["one_shot"] and job["next_fire_at"] is None:
            access.records.delete_job(job["id"])


async def _close(rig: Rig) -> None:
    close = getattr(rig, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:
            log.exception("closing the rig of a durable run failed")


async def run_inline(access: DurableAccess, task_id: str) -> dict[str, Any]:
    """Run a task now in this process (``cron run``): the same attempt logic, no engine."""
    workflow_id = f"{task_id}#1"
    access.records.set_task(task_id, where_status=("queued",), status="submitted", workflow_id=workflow_id)
    await run_attempt(access, task_id, workflow_id, "inline")
    task = access.records.task(task_id)
    if task is None:
        raise DurableError("not_found", f"Task {task_id} disappeared while it ran.")
    return task
