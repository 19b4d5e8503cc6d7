"""``toolrig worker``: one process that fires schedules, queues due tasks and runs them through the engine.

Every worker does the same poll; the store's compare-and-set updates decide which one records a firing or
submits a task, and the engine's workflow ids make a duplicate submit harmless. A worker that stops
heartbeating for ``dead_after_seconds`` is declared dead by the first live worker that notices, which has
the engine run its unfinished attempts again (their journals skip the finished steps).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.durable.access import DurableAccess, database_url
from toolrig.workers.engine import Engine, open_engine

if TYPE_CHECKING:
    from toolrig.durable.jobs import JobBook
    from toolrig.durable.store import Records
    from toolrig.durable.tasks import TaskBook

log = logging.getLogger("toolrig.durable")

DUE_POLL_SECONDS = 0.05


class Worker:
    def __init__(self, access: DurableAccess, *, concurrency: int | None = None, engine: Engine | None = None) -> None:
        self.access = access
        self.settings = access.config.workers
        self.concurrency = concurrency or self.settings.concurrency
        self.engine = engine or open_engine(database_url(self.settings, access.state_dir), str(access.state_dir))
        self.ready = threading.Event()

    @property
    def worker_id(self) -> str:
        return self.engine.worker_id

    def run(self, stop: threading.Event) -> None:
        from toolrig.workers.host import WorkerHost, install

        records = self.access.records
        jobs = self.access.job_book
        tasks = self.access.task_book
        host = WorkerHost(self.access.root)  # the event loop, Rigs and model clients this worker's runs share
        host.start()
        install(host)
        try:
            self._serve(stop, records, jobs, tasks)
        finally:
            install(None)
            host.stop()

    def _serve(self, stop: threading.Event, records: Records, jobs: JobBook, tasks: TaskBook) -> None:
        self.engine.start(root=str(self.access.root), concurrency=self.concurrency)
        records.heartbeat(self.worker_id, time.time())
        self.ready.set()
        from toolrig.durable.store import listen_for_tasks

        wake = self.engine.wake
        listening = listen_for_tasks(records.url, wake, stop)
        threading.Thread(target=_relay, args=(stop, wake), name="toolrig-worker-stop", daemon=True).start()
        housekeeping_at = 0.0
        try:
            while not stop.is_set():
                now = time.time()
                if now >= housekeeping_at:
                    housekeeping_at = now + self.settings.poll_seconds
                    records.heartbeat(self.worker_id, now)
                    jobs.fire_due(now)
                    tasks.release_waiting(now)
                    dead = records.claim_dead_workers(now - self.settings.dead_after_seconds, self.worker_id)
                    if dead:
                        count = self.engine.recover(dead)
                        log.warning("workers %s stopped answering: %d of their runs recovered here", dead, count)
                        self._resubmit_stale(now)
                self._submit_due(now)
                # Due tasks are looked for when a slot frees, when PostgreSQL says one was queued, else often (one
                # indexed query, none while every slot is busy): an idle worker starts a new task at once.
                pause = max(0.0, housekeeping_at - time.time())
                if listening is None or not listening.is_set():
                    pause = min(pause, DUE_POLL_SECONDS)
                wake.wait(pause)
                wake.clear()
        finally:
            self.engine.stop()
            records.remove_worker(self.worker_id)

    def _submit_due(self, now: float) -> None:
        free = self.engine.capacity()
        if free <= 0:
            return  # the others take what is due; this worker's next free slot looks again
        records = self.access.records
        for task in records.due_tasks(now, limit=free):
            workflow_id = f"{task['id']}#{task['attempt']}"
            if records.set_task(
                task["id"], where_status=("queued",), status="submitted", workflow_id=workflow_id, worker=self.worker_id
            ):
                self.engine.submit(workflow_id, task["id"])

    def _resubmit_stale(self, now: float) -> None:
        """Submits a dead worker claimed but may not have handed over; resubmitting is a no-op otherwise."""
        for task in self.access.records.tasks(status="submitted", limit=1000):
            if task["workflow_id"]:
                self.engine.submit(task["workflow_id"], task["id"], counted=False)


def _relay(stop: threading.Event, wake: threading.Event) -> None:
    """A stop wakes the worker's loop too (it waits on ``wake``, up to poll_seconds)."""
    stop.wait()
    wake.set()


def open_worker(root: Path, *, concurrency: int | None = None) -> Worker:
    from toolrig.config import load_config
    from toolrig.sandbox.paths import Workspace

    config = load_config(root).config
    access = DurableAccess(root.resolve(), config, Workspace(root).state_dir)
    access.require_trusted("Starting a worker")
    return Worker(access, concurrency=concurrency)
