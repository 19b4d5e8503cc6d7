"""ask_user in a scheduled task: nobody watches a schedule, so its questions are skipped, never a hang."""

from __future__ import annotations

from tests.durable.support import running_worker, wait_for
from toolrig.durable.access import DurableAccess


def test_a_queued_task_that_asks_the_user_goes_on_with_skipped_answers(access: DurableAccess) -> None:
    task_id = access.task_book.add(prompt="ask:the user", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: access.records.task(task_id)["status"] in ("done", "failed", "paused"), what="the task")
    task = access.records.task(task_id)
    assert task["status"] == "done", task
    assert task["result"] == "asked; skipped=True"
