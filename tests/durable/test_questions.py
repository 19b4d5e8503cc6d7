"""People in the loop in a scheduled task: questions are skipped (nobody watches), todos and follow-ups kept."""

from __future__ import annotations

from tests.support.durable import running_worker, wait_for
from toolrig.durable.access import DurableAccess


def test_a_queued_task_that_asks_the_user_goes_on_with_skipped_answers(access: DurableAccess) -> None:
    task_id = access.task_book.add(prompt="ask:the user", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: access.records.task(task_id)["status"] in ("done", "failed", "paused"), what="the task")
    task = access.records.task(task_id)
    assert task["status"] == "done", task
    assert task["result"] == "asked; skipped=True"


def test_a_queued_task_keeps_its_todo_list_and_followups_with_its_session(access: DurableAccess) -> None:
    from toolrig.stores.notes import SessionNotes

    task_id = access.task_book.add(prompt="todos: plan it", by="person")["id"]
    with running_worker(access):
        wait_for(lambda: access.records.task(task_id)["status"] in ("done", "failed", "paused"), what="the task")
    task = access.records.task(task_id)
    assert task["status"] == "done", task
    notes = SessionNotes(access.state_dir / "notes.sqlite")
    try:
        assert notes.get(task["session_id"], "todos") == [
            {"task": "look", "status": "completed"},
            {"task": "report", "status": "in_progress"},
        ]
        assert notes.get(task["session_id"], "followups") == ["look again", "report twice"]
    finally:
        notes.close()
