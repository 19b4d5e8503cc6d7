"""On PostgreSQL a worker is told when a task becomes queued (LISTEN/NOTIFY) instead of polling for it; SQLite
workers poll."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.support.durable import access_for, config
from tests.support.fake_llm import FakeLLM
from toolrig.durable.store import listen_for_tasks, sqlite_url


def test_a_queued_task_wakes_a_listening_worker_on_postgresql(workspace: Path, postgres: Any, llm: FakeLLM) -> None:
    access = access_for(workspace, config(llm, database_url=postgres.new_database()))
    wake, stop = threading.Event(), threading.Event()
    listening = listen_for_tasks(access.records.url, wake, stop)
    try:
        assert listening is not None and listening.is_set()
        task = access.task_book.add(prompt="append:x", by="person")
        assert wake.wait(30), "an added task did not wake the worker"
        wake.clear()
        access.records.set_task(task["id"], status="waiting")
        access.task_book.release_waiting()  # waiting -> queued: the next attempt is due
        assert wake.wait(30), "a task queued again did not wake the worker"
    finally:
        stop.set()
        access.close()


def test_a_sqlite_worker_does_not_listen(workspace: Path) -> None:
    assert listen_for_tasks(sqlite_url(workspace / ".toolrig"), threading.Event(), threading.Event()) is None
