"""The cron tool as seed 000 (CamelAGI's cron.ts) calls it: name optional, a given id kept, once or repeating said.

Issue 38 item 7; ``Nd`` (like ``Ns``/``Nm``/``Nh``) counts from when the job was added.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from toolrig.durable.access import DurableAccess
from toolrig.durable.schedule import parse_schedule
from toolrig.profiles import NAMES
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("profile", NAMES)
async def test_add_without_a_name_is_named_by_its_id_and_a_given_id_is_kept(durable_rig: Rig, profile: str) -> None:
    call = {"action": "add", "id": "daily-summary", "name": None, "schedule": "1d", "prompt": "Summarize the day."}
    added = await durable_rig.call("cron", call, profile=profile)
    assert not added.is_error, added
    text = str(added.output)
    assert "daily-summary" in text and "Repeating" in text
    (row,) = (await durable_rig.call("cron", {"action": "list"})).output["jobs"]
    assert (row["id"], row["name"]) == ("daily-summary", "daily-summary")
    again = await durable_rig.call("cron", call, profile=profile)
    assert again.is_error and "exists already" in (again.message or "")


async def test_no_id_and_no_name_gives_a_generated_id_as_the_name(durable_rig: Rig) -> None:
    added = await durable_rig.call("cron", {"action": "add", "schedule": "+20m", "prompt": "Remind me."})
    assert not added.is_error, added
    job = added.output["job"]
    assert job["name"] == job["id"] and job["id"].startswith("j-")
    assert job["one_shot"] is True and added.output["note"].startswith("One-shot job")


@pytest.mark.parametrize("bad", ["../etc", "a b", "", "-x", "x" * 65, "é"])
async def test_a_chosen_id_must_be_a_plain_token(durable_rig: Rig, bad: str) -> None:
    result = await durable_rig.call("cron", {"action": "add", "id": bad, "schedule": "1h", "prompt": "p"})
    assert result.is_error and result.error_type == "invalid_input", result


@pytest.mark.parametrize(("every", "seconds"), [("30s", 30), ("15m", 900), ("2h", 7200), ("2d", 172_800)])
def test_every_n_counts_from_when_the_job_was_added(access: DurableAccess, every: str, seconds: int) -> None:
    added_at = datetime(2026, 3, 4, 9, 0, 7, tzinfo=UTC).timestamp()
    job = access.job_book.add(name="n", schedule=every, prompt="p", by="person", now=added_at)
    assert job["next_fire_at"] == added_at + seconds
    parsed = access.job_book.parsed(access.job_book.get(job["id"]))
    later = datetime.fromtimestamp(added_at + 2.5 * seconds, UTC)
    assert parsed.next_times(later, 1)[0].timestamp() == added_at + 3 * seconds


def test_the_seeds_two_days_added_at_nine_fires_at_nine_not_midnight() -> None:
    nine = datetime(2026, 3, 4, 9, 0, tzinfo=UTC)
    assert parse_schedule("2d", now=nine).next_times(nine, 2) == [
        datetime(2026, 3, 6, 9, 0, tzinfo=UTC),
        datetime(2026, 3, 8, 9, 0, tzinfo=UTC),
    ]
