"""Tasks and schedules run by a real worker on DBOS with the SQLite default (a worker thread, one process)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.durable import access_for, install_rig, running_worker, wait_for
from tests.support.sample_tools import OUT
from toolrig.durable.access import DurableAccess
from toolrig.workers.journal import UNKNOWN_OUTCOME
from toolrig.workers.runner import run_attempt


def ended(access: DurableAccess, *ids: str) -> bool:
    return all(access.records.task(i)["status"] in ("done", "failed", "cancelled") for i in ids)


def lines(workspace: Path) -> list[str]:
    path = workspace / OUT
    return path.read_text().splitlines() if path.exists() else []


def test_queued_tasks_each_run_once_and_end_with_their_terminal_tool(access: DurableAccess, workspace: Path) -> None:
    ids = [access.task_book.add(prompt=f"append:line{i}", by="person")["id"] for i in range(8)]
    failing = access.task_book.add(prompt="fail:cannot do it", by="person")["id"]
    with running_worker(access, concurrency=3):
        wait_for(lambda: ended(access, *ids, failing), what="the tasks to end")
    assert sorted(lines(workspace)) == sorted(f"line{i}" for i in range(8))
    for task_id in ids:
        task = access.records.task(task_id)
        assert task["status"] == "done"
        assert task["result"] == "finished after 1 turns"
        assert task["attempt"] == 1
    failed = access.records.task(failing)
    assert failed["status"] == "failed"
    assert failed["result"] == "cannot do it"


def test_a_task_waiting_for_another_resumes_in_its_session_once_the_other_ends(
    access: DurableAccess, workspace: Path
) -> None:
    later = access.task_book.add(prompt="append:second", by="person", after="+1h")["id"]
    waiter = access.task_book.add(prompt=f"wait:{later}", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: access.records.task(waiter)["status"] == "waiting", what="the wait")
        first_session = access.records.task(waiter)["session_id"]
        assert access.records.task(waiter)["wait_for"] == later
        access.records.set_task(later, not_before=time.time())  # let the awaited task run now
        wait_for(lambda: ended(access, later, waiter), what="both tasks")
    task = access.records.task(waiter)
    assert task["status"] == "done"
    assert task["attempt"] == 2
    assert task["session_id"] == first_session
    assert lines(workspace) == ["second"]


def test_a_cancelled_task_does_not_run(access: DurableAccess, workspace: Path) -> None:
    task_id = access.task_book.add(prompt="append:never", by="person", after="+1h")["id"]
    access.task_book.cancel(task_id)
    access.records.set_task(task_id, not_before=time.time())
    keep = access.task_book.add(prompt="append:yes", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: ended(access, keep), what="the other task")
    assert access.records.task(task_id)["status"] == "cancelled"
    assert lines(workspace) == ["yes"]


def test_a_run_that_needs_approval_parks_as_paused_until_a_person_approves(
    workspace: Path, cfg: dict[str, Any]
) -> None:
    settings = {**cfg, "tools": {"rules": [{"tool": "append_line", "verdict": "ask"}]}}
    install_rig(settings)
    access = access_for(workspace, settings)
    task_id = access.task_book.add(prompt="append:approved", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: access.records.task(task_id)["status"] == "paused", what="the pause")
        assert lines(workspace) == []
        from toolrig.durable.tasks import view

        shown = view(access.records.task(task_id), full=True)
        assert [p["tool"] for p in shown["pending_approvals"]] == ["append_line"]
        access.task_book.approve(task_id)
        wait_for(lambda: ended(access, task_id), what="the approved run")
    assert access.records.task(task_id)["status"] == "done"
    assert lines(workspace) == ["approved"]


def test_a_scheduled_job_fires_through_the_worker_once_per_firing(access: DurableAccess, workspace: Path) -> None:
    job = access.job_book.add(name="tick", schedule="1s", prompt="append:tick", by="person")
    with running_worker(access):
        wait_for(lambda: len([t for t in access.records.tasks(job_id=job["id"]) if t["status"] == "done"]) >= 2)
        access.job_book.remove(job["id"], by="person")
        wait_for(lambda: access.records.count_open_for_job(job["id"]) == 0, what="the last firing")
    firings = access.records.tasks(job_id=job["id"])
    fire_times = [t["fire_time"] for t in firings]
    assert len(fire_times) == len(set(fire_times))
    done = [t for t in firings if t["status"] == "done"]
    assert len(lines(workspace)) == len(done)


# ------------------------------------------------------------------------------ the journal (crash and replay)


def _rerun_attempt(access: DurableAccess, task_id: str) -> dict[str, Any] | None:
    """What the engine does after a crash: the same attempt (workflow id) runs again from the top."""
    task = access.records.task(task_id)
    return anyio.run(run_attempt, access, task_id, task["workflow_id"], "replayer")


def test_a_replayed_attempt_does_not_repeat_a_completed_tool_call(access: DurableAccess, workspace: Path) -> None:
    task_id = access.task_book.add(prompt="append:once", by="person")["id"]
    workflow_id = f"{task_id}#1"
    access.records.set_task(task_id, status="submitted", workflow_id=workflow_id)
    anyio.run(run_attempt, access, task_id, workflow_id, "first")
    assert lines(workspace) == ["once"]
    # The worker died after the tool call but before the run's end was recorded.
    access.records.set_task(task_id, status="running", ended_at=None)
    with access.records.tx() as c:
        from toolrig.durable.store import steps

        c.execute(steps.delete().where(steps.c.run_id == workflow_id, steps.c.key.like("%complete%")))
        c.execute(steps.delete().where(steps.c.run_id == workflow_id, steps.c.key == "turn-1"))
    task = _rerun_attempt(access, task_id)
    assert task is not None and task["status"] == "done"
    assert lines(workspace) == ["once"]


def test_a_tool_call_whose_outcome_is_unknown_is_reported_to_the_model_not_rerun(
    access: DurableAccess, workspace: Path, llm: Any
) -> None:
    task_id = access.task_book.add(prompt="append:maybe", by="person")["id"]
    workflow_id = f"{task_id}#1"
    access.records.set_task(task_id, status="running", workflow_id=workflow_id)
    # The crashed attempt had asked the model (turn 0) and started the tool call, then died.
    anyio.run(_record_first_turn_only, access, task_id, workflow_id)
    call_key = next(k for k in _keys(access, workflow_id) if k.startswith("tool-"))
    assert access.records.step(workflow_id, call_key)[0] == "started"
    requests_before = len(llm.requests)
    task = _rerun_attempt(access, task_id)
    assert task is not None and task["status"] == "done"
    assert lines(workspace) == []  # not silently run again
    state, payload = access.records.step(workflow_id, call_key)
    assert state == "done"
    assert payload["is_error"] and payload["message"] == UNKNOWN_OUTCOME
    # The model was told: its next request carries the unknown outcome as the tool's result.
    told = json.dumps(llm.requests[requests_before].body["messages"][-1])
    assert "unknown" in told


async def _record_first_turn_only(access: DurableAccess, task_id: str, workflow_id: str) -> None:
    from toolrig.workers.runner import _CheckedJournal, _make_rig

    task = access.records.task(task_id)
    journal = _CheckedJournal(access, workflow_id, task_id)
    from toolrig.agent.state import RunOptions

    class _Crash(Exception):
        pass

    class _CrashingJournal(type(journal)):  # type: ignore[misc]
        async def tool_call(self, key: str, run: Any) -> Any:
            await self._call(self.records.step_started, self.run_id, key)
            raise _Crash

    rig = _make_rig(access.root, None)
    crashing = _CrashingJournal(access, workflow_id, task_id)
    from toolrig.agent.entry import run_agent

    with pytest.raises(_Crash):
        await run_agent(task["prompt"], RunOptions(steps=crashing), rig=rig)


def _keys(access: DurableAccess, run_id: str) -> list[str]:
    from toolrig.durable.store import steps

    with access.records.tx() as c:
        return [r.key for r in c.execute(steps.select().where(steps.c.run_id == run_id))]


@pytest.mark.parametrize("agent", ["general-1a2b3c", "removed-from-config"])
def test_a_task_whose_agent_no_longer_exists_fails_with_the_reason_not_left_running(
    access: DurableAccess, workspace: Path, agent: str
) -> None:
    """A subagent's id lives only as long as the child; a config agent can be removed before its task runs."""
    orphan = access.task_book.add(prompt="append:never", by="model", agent=agent)["id"]
    keep = access.task_book.add(prompt="append:yes", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: ended(access, orphan, keep), what="both tasks to end")
    task = access.records.task(orphan)
    assert task["status"] == "failed"
    assert agent in task["result"] and task["result"].startswith("config:")
    assert lines(workspace) == ["yes"]


def test_cron_run_of_a_job_whose_agent_is_gone_reports_it_failed(access: DurableAccess) -> None:
    job = access.job_book.add(name="orphan", schedule="1d", prompt="append:never", by="model", agent="gone-agent")
    ran = anyio.run(access.run_job, job["id"])
    assert ran["status"] == "failed"
