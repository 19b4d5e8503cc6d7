"""The ``cron`` tool's contract and the job rules behind it, on the SQLite default."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.durable import access_for
from toolrig.durable.access import DurableAccess
from toolrig.durable.api import DurableError
from toolrig.durable.jobs import JobBook, config_job_id
from toolrig.durable.store import Records
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


async def cron(rig: Rig, **args: Any) -> Any:
    return await rig.call("cron", args)


async def test_add_then_list_shows_the_job_with_its_fields(durable_rig: Rig) -> None:
    added = await cron(durable_rig, action="add", name="standup", schedule="0 9 * * 1-5 Europe/Paris", prompt="Say hi")
    assert not added.is_error, added
    job = added.output["job"]
    listed = await cron(durable_rig, action="list")
    (row,) = listed.output["jobs"]
    assert row["id"] == job["id"]
    assert row["name"] == "standup"
    assert row["schedule"] == "0 9 * * 1-5 Europe/Paris"
    assert row["source"] == "runtime"
    assert row["enabled"] is True
    assert row["running"] is False
    assert row["last_run"] is None and row["last_status"] is None
    assert row["prompt_preview"] == "Say hi"
    assert row["expires"] is not None  # a model's job expires


@pytest.mark.parametrize(
    ("args", "error_type"),
    [
        ({"action": "add", "name": "n", "id": "../x", "schedule": "15m", "prompt": "p"}, "invalid_input"),
        ({"action": "add", "name": "n", "prompt": "p"}, "invalid_input"),  # no schedule
        ({"action": "add", "name": "n", "schedule": "15m"}, "invalid_input"),  # no prompt
        ({"action": "add", "name": "n", "schedule": "whenever", "prompt": "p"}, "invalid_input"),
        ({"action": "add", "name": "n", "schedule": "2020-01-01T00:00", "prompt": "p"}, "invalid_input"),
        ({"action": "remove"}, "invalid_input"),
        ({"action": "remove", "id": "j-nope"}, "not_found"),
        ({"action": "run", "id": "j-nope"}, "not_found"),
        ({"action": "explode"}, "invalid_input"),
    ],
)
async def test_bad_calls_get_clear_errors(durable_rig: Rig, args: dict[str, Any], error_type: str) -> None:
    result = await cron(durable_rig, **args)
    assert result.is_error
    assert result.error_type == error_type
    assert result.error_type != "internal"


async def test_an_invalid_schedule_error_lists_the_accepted_forms(durable_rig: Rig) -> None:
    result = await cron(durable_rig, action="add", name="n", schedule="every tuesday", prompt="p")
    assert "Accepted forms" in (result.message or "")


async def test_remove_deletes_a_runtime_job(durable_rig: Rig) -> None:
    job = (await cron(durable_rig, action="add", name="n", schedule="1h", prompt="p")).output["job"]
    removed = await cron(durable_rig, action="remove", id=job["id"])
    assert not removed.is_error
    assert (await cron(durable_rig, action="list")).output["jobs"] == []


async def test_config_jobs_are_listed_but_cannot_be_removed_by_the_tool(workspace: Path, cfg: dict[str, Any]) -> None:
    from tests.support.durable import tools
    from toolrig.registry import Registry

    settings = {**cfg, "cron": [{"name": "nightly report", "schedule": "0 2 * * *", "prompt": "Report."}]}
    rig = Rig(workspace, config=settings, registry=Registry(tools()))
    (row,) = (await cron(rig, action="list")).output["jobs"]
    assert row["source"] == "config"
    assert row["expires"] is None
    result = await cron(rig, action="remove", id=row["id"])
    assert result.is_error
    assert result.error_type == "denied"
    assert "config" in (result.next_action_hint or "")


def test_config_jobs_follow_the_config(access: DurableAccess) -> None:
    book = access.job_book
    from toolrig.config import CronJobConfig

    book.sync_config(
        [CronJobConfig(name="a", schedule="1h", prompt="p"), CronJobConfig(name="b", schedule="2h", prompt="q")]
    )
    assert {j["id"] for j in book.live()} == {config_job_id("a"), config_job_id("b")}
    book.sync_config([CronJobConfig(name="a", schedule="3h", prompt="p")])
    (job,) = book.live()
    assert job["schedule"] == "3h"


def test_the_cli_cannot_remove_a_config_job_either(access: DurableAccess) -> None:
    from toolrig.config import CronJobConfig

    access.job_book.sync_config([CronJobConfig(name="a", schedule="1h", prompt="p")])
    with pytest.raises(DurableError) as caught:
        access.job_book.remove(config_job_id("a"), by="person")
    assert caught.value.kind == "forbidden"


def test_model_jobs_expire_after_seven_days_unless_renewed(access: DurableAccess) -> None:
    book = access.job_book
    now = time.time()
    model_job = book.add(name="m", schedule="1h", prompt="p", by="model", now=now)
    renewed = book.add(name="r", schedule="1h", prompt="p", by="model", now=now)
    person_job = book.add(name="h", schedule="1h", prompt="p", by="person", now=now)
    book.renew(renewed["id"])
    later = now + 7 * 86400 + 1
    assert {j["id"] for j in book.live(later)} == {renewed["id"], person_job["id"]}
    assert access.records.job(model_job["id"]) is None


def test_the_number_of_runtime_jobs_is_capped(access: DurableAccess) -> None:
    book = JobBook(access.records, access.config.workers.model_copy(update={"max_jobs": 3}))
    for i in range(3):
        book.add(name=f"j{i}", schedule="1h", prompt="p", by="model")
    with pytest.raises(DurableError) as caught:
        book.add(name="one too many", schedule="1h", prompt="p", by="person")
    assert caught.value.kind == "limit"


def test_a_runtime_job_survives_reopening_the_workspace(workspace: Path, cfg: dict[str, Any]) -> None:
    first = access_for(workspace, cfg)
    job = first.job_book.add(name="keep", schedule="1h", prompt="p", by="person")
    again = access_for(workspace, cfg)
    assert [j["id"] for j in again.job_book.live()] == [job["id"]]


def test_each_firing_is_recorded_once_even_when_two_workers_race(access: DurableAccess) -> None:
    now = time.time()
    job = access.job_book.add(name="tick", schedule="1s", prompt="p", by="person", now=now - 5)
    other = JobBook(Records(access.records.url), access.config.workers)
    first = access.job_book.fire_due(now)
    second = other.fire_due(now)
    assert len(first) == 1 and second == []
    assert [t["id"] for t in access.records.tasks(job_id=job["id"])] == [first[0].task_id]


def test_a_firing_noticed_after_the_grace_period_is_recorded_as_missed(access: DurableAccess) -> None:
    now = time.time()
    job = access.job_book.add(name="late", schedule="1h", prompt="p", by="person", now=now - 7200)
    (firing,) = access.job_book.fire_due(now)
    assert firing.status == "missed"
    assert access.records.task(firing.task_id)["status"] == "missed"
    assert access.records.job(job["id"])["next_fire_at"] > now  # it goes on from the next firing


def test_a_job_does_not_overlap_itself(access: DurableAccess) -> None:
    now = time.time()
    access.job_book.add(name="slow", schedule="1s", prompt="p", by="person", now=now - 3)
    (first,) = access.job_book.fire_due(now - 1.5)
    (second,) = access.job_book.fire_due(now)
    assert first.status == "queued"
    assert second.status == "skipped"


async def test_run_executes_the_job_now_and_returns_the_start_of_its_answer(durable_rig: Rig) -> None:
    long = "x" * 700
    job = (await cron(durable_rig, action="add", name="n", schedule="1d", prompt=f"answer:{long}")).output["job"]
    ran = await cron(durable_rig, action="run", id=job["id"])
    assert not ran.is_error, ran
    assert ran.output["status"] == "done"
    assert ran.output["answer"] == long[:500]
    listed = (await cron(durable_rig, action="list")).output["jobs"]
    assert listed[0]["last_status"] == "done"


async def test_a_rig_built_from_python_runs_a_job_through_the_installed_runtime(
    workspace: Path, cfg: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_agent``'s default Rig is handed no ``durable_runner``: the installed toolrig declares its runtime as an
    entry point, and a job still runs now. Where none is installed (a source tree), the action says so."""
    from tests.support.durable import tools
    from toolrig.durable import access as access_module
    from toolrig.registry import Registry
    from toolrig.workers import run_inline

    assert access_module._installed_runner() is run_inline  # the package's own metadata, not a test double
    bare = Rig(workspace, config=cfg, registry=Registry(tools()))
    job = (await cron(bare, action="add", name="n", schedule="1d", prompt="answer:from python")).output["job"]
    ran = await cron(bare, action="run", id=job["id"])
    assert not ran.is_error and ran.output["answer"] == "from python", ran
    monkeypatch.setattr(access_module, "_installed_runner", lambda: None)
    refused = await cron(bare, action="run", id=job["id"])
    assert refused.is_error and refused.error_type == "unavailable", refused
    assert f"toolrig cron run {job['id']}" in (refused.next_action_hint or "")


async def test_the_rig_a_command_makes_runs_a_job_now(workspace: Path, cfg: dict[str, Any]) -> None:
    """``toolrig call`` and ``toolrig mcp`` build their Rig with ``make_rig``, which hands it the agent runtime."""
    from toolrig.cli import make_rig

    rig = make_rig(workspace)
    job = (await cron(rig, action="add", name="n", schedule="1d", prompt="answer:from a command")).output["job"]
    ran = await cron(rig, action="run", id=job["id"])
    assert not ran.is_error and ran.output["answer"] == "from a command", ran


async def test_a_one_shot_deletes_itself_after_it_ran(durable_rig: Rig, access: DurableAccess) -> None:
    job = (await cron(durable_rig, action="add", name="once", schedule="+20m", prompt="answer:ok")).output["job"]
    access.records.update_job(job["id"], next_fire_at=time.time() - 1)  # its time has come
    (firing,) = access.job_book.fire_due()
    from toolrig.workers.runner import run_inline

    task = await run_inline(access, firing.task_id)
    assert task["status"] == "done"
    assert access.records.job(job["id"]) is None
    assert (await cron(durable_rig, action="list")).output["jobs"] == []


@pytest.mark.parametrize(
    ("caller", "owner"), [("reader", "reporter"), ("reader", None), (None, "reporter"), ("reporter", "reader")]
)
@pytest.mark.parametrize("action", ["run", "remove"])
async def test_a_model_may_run_or_remove_only_its_own_agents_jobs(
    workspace: Path, cfg: dict[str, Any], caller: str | None, owner: str | None, action: str
) -> None:
    """A job runs under its agent's profile: running another's would lend the caller those permissions."""
    from tests.support.durable import install_rig, tools
    from toolrig.registry import Registry
    from toolrig.workers import run_inline

    agents = {"reader": {"tools": ["cron"]}, "reporter": {"tools": ["cron", "tasks"]}}
    settings = {**cfg, "agents": agents}
    install_rig(settings)  # the runs' rigs know these agents too
    owner_rig = Rig(workspace, config=settings, registry=Registry(tools()), agent=owner, durable_runner=run_inline)
    added = await cron(owner_rig, action="add", name="theirs", schedule="1d", prompt="answer:secret")
    assert not added.is_error, added
    job_id = added.output["job"]["id"]
    caller_rig = Rig(workspace, config=settings, registry=Registry(tools()), agent=caller)
    result = await cron(caller_rig, action=action, id=job_id)
    assert result.is_error and result.error_type == "denied", result
    assert f"toolrig cron {action} {job_id}" in (result.next_action_hint or "")
    assert "secret" not in str(result)
    assert "theirs" not in str(result) and "reporter" not in str(result)  # nor its name, nor whose it is
    access = access_for(workspace, settings)
    assert list(access.records.tasks(status=None, limit=10)) == []  # nothing ran
    assert [j["id"] for j in access.list_jobs()] == [job_id]  # nothing removed
    ran = await cron(owner_rig, action="run", id=job_id)  # its own agent may
    assert not ran.is_error and ran.output["answer"] == "secret", ran
    (task,) = access.records.tasks(status=None, limit=10)
    assert task["created_by"] == "model"  # the record says who asked for it


async def test_a_config_job_of_another_agent_cannot_be_run_by_the_model(workspace: Path, cfg: dict[str, Any]) -> None:
    from tests.support.durable import tools
    from toolrig.registry import Registry

    settings = {
        **cfg,
        "agents": {"reader": {"tools": ["cron"]}, "reporter": {"tools": ["tasks"]}},
        "cron": [{"name": "payroll", "schedule": "0 2 1 * *", "prompt": "answer:payroll", "agent": "reporter"}],
    }
    rig = Rig(workspace, config=settings, registry=Registry(tools()), agent="reader")
    (row,) = access_for(workspace, settings).list_jobs()  # the person sees it; the reader's list does not
    result = await cron(rig, action="run", id=row["id"])
    assert result.is_error and result.error_type == "denied", result


@pytest.mark.parametrize("caller", ["reader", "reporter", None])
async def test_a_models_list_shows_only_the_jobs_that_run_as_its_agent(
    workspace: Path, cfg: dict[str, Any], caller: str | None
) -> None:
    """Another profile's jobs (config or runtime) are its work: their prompts are not this model's to read."""
    from tests.support.durable import install_rig, tools
    from toolrig.registry import Registry

    settings = {
        **cfg,
        "agents": {"reader": {"tools": ["cron"]}, "reporter": {"tools": ["cron"]}},
        "cron": [{"name": "payroll", "schedule": "0 2 1 * *", "prompt": "answer:payroll", "agent": "reporter"}],
    }
    install_rig(settings)
    owners: dict[str, str | None] = {}
    for owner in ("reader", "reporter", None):
        rig = Rig(workspace, config=settings, registry=Registry(tools()), agent=owner)
        added = await cron(rig, action="add", name=f"of-{owner}", schedule="1d", prompt=f"answer:prompt-of-{owner}")
        owners[added.output["job"]["id"]] = owner
    owners |= {row["id"]: "reporter" for row in access_for(workspace, settings).list_jobs() if row["name"] == "payroll"}
    rig = Rig(workspace, config=settings, registry=Registry(tools()), agent=caller)
    listed = (await cron(rig, action="list")).output["jobs"] or []
    assert {row["id"] for row in listed} == {job for job, owner in owners.items() if owner == caller}
    assert all(f"prompt-of-{owner}" not in str(listed) for owner in ("reader", "reporter", None) if owner != caller)
    assert len(access_for(workspace, settings).list_jobs()) == 4  # the person's list is whole


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("tasks", {"action": "add", "prompt": "later"}),
        ("cron", {"action": "add", "name": "n", "schedule": "1d", "prompt": "later"}),
    ],
)
async def test_a_subagent_cannot_queue_work_that_would_run_as_an_agent_that_no_longer_exists(
    durable_rig: Rig, tool: str, args: dict[str, Any]
) -> None:
    """A child's agent id lives only while it runs: what it queued would be accepted now and fail later."""
    from toolrig.config import AgentConfig

    child = durable_rig.agent_view().child("general-1a2b3c", AgentConfig(tools=["tasks", "cron"]))
    result = await durable_rig.executor.invoke(tool, args, agent_id="general-1a2b3c", agent=child)
    assert result.is_error and result.error_type == "denied", result
    assert result.next_action_hint
    listed = await cron(durable_rig, action="list")
    assert listed.output["jobs"] == []
