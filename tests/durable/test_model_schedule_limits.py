"""A model's schedules get a floor and a budget: each firing is a full agent run nobody is asked about."""

from __future__ import annotations

import pytest

from toolrig.durable.access import DurableAccess
from toolrig.durable.api import DurableError
from toolrig.durable.jobs import JobBook
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("schedule", ["1s", "30s", "59s"])
def test_a_model_schedule_faster_than_the_floor_is_refused(access: DurableAccess, schedule: str) -> None:
    book = JobBook(access.records, access.config.workers)
    with pytest.raises(DurableError, match="at most every 60 seconds") as caught:
        book.add(name="n", schedule=schedule, prompt="p", by="model")
    assert caught.value.kind == "invalid"


@pytest.mark.parametrize("schedule", ["60s", "1m", "5m", "* * * * *", "0 9 * * 1-5", "+1m"])
def test_a_model_schedule_at_or_above_the_floor_is_accepted(access: DurableAccess, schedule: str) -> None:
    JobBook(access.records, access.config.workers).add(name="n", schedule=schedule, prompt="p", by="model")


def test_a_person_may_schedule_faster_than_a_models_floor(access: DurableAccess) -> None:
    JobBook(access.records, access.config.workers).add(name="n", schedule="10s", prompt="p", by="person")


def test_the_floor_is_configurable(access: DurableAccess) -> None:
    book = JobBook(access.records, access.config.workers.model_copy(update={"model_min_interval_seconds": 3600}))
    with pytest.raises(DurableError, match="3600"):
        book.add(name="n", schedule="30m", prompt="p", by="model")


def test_one_agents_model_holds_at_most_its_budget_of_jobs(access: DurableAccess) -> None:
    book = JobBook(access.records, access.config.workers.model_copy(update={"model_max_jobs": 2}))
    for i in range(2):
        book.add(name=f"j{i}", schedule="1h", prompt="p", by="model", agent="a")
    with pytest.raises(DurableError) as caught:
        book.add(name="third", schedule="1h", prompt="p", by="model", agent="a")
    assert caught.value.kind == "limit" and "model_max_jobs" in str(caught.value)
    book.add(name="other agent", schedule="1h", prompt="p", by="model", agent="b")  # a budget per agent
    book.add(name="a person's", schedule="1h", prompt="p", by="person", agent="a")  # people are not counted


async def test_through_the_cron_tool_the_refusal_is_a_clear_error(durable_rig: Rig) -> None:
    result = await durable_rig.call("cron", {"action": "add", "name": "spam", "schedule": "1s", "prompt": "p"})
    assert result.is_error and result.error_type == "invalid_input"
    assert "60 seconds" in (result.message or "")
