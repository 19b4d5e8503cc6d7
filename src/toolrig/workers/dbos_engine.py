"""DBOS Transact as toolrig's workflow engine: one workflow per attempt, started at once, and recovery.

The only module that imports ``dbos``. DBOS keeps its system tables in its own SQLite file beside ours, or
in the ``dbos`` schema of the shared PostgreSQL database. A worker starts the attempts it claimed itself, as
many as it has free slots (``capacity``): a second poll in series (DBOS's queue after toolrig's) made an idle
worker take ~0.65 s to start a task. An attempt's workflow id (``<task>#<n>``) makes a second start a no-op.
The queue stays registered, slowly polled, only to drain attempts an older worker had queued there.
Recovery of a dead worker's attempts is DBOS's own re-enqueue of its pending workflows, triggered by the
worker that noticed the silence (toolrig's heartbeat table), since DBOS without Conductor recovers only its
own executor's work at launch.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path

from dbos import DBOS, DBOSConfig, SetWorkflowID

from toolrig.sandbox.statedir import prepare_database

QUEUE = "toolrig_tasks"
APP = "toolrig"
APP_VERSION = "toolrig-durable-1"  # the same on every worker: recovery only takes workflows of its own version


class _Slots:
    """The attempts this process started and that have not ended (the workflows report their end)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: set[str] = set()
        self.freed = threading.Event()  # set when an attempt ends: its worker may claim another

    def take(self, workflow_id: str) -> None:
        with self._lock:
            self._ids.add(workflow_id)

    def free(self, workflow_id: str) -> None:
        with self._lock:
            self._ids.discard(workflow_id)
        self.freed.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)


_slots = _Slots()  # one DBOS per process, so one set of its running attempts


@DBOS.workflow(name="toolrig_task_attempt")
def _attempt(root: str, task_id: str) -> str:
    from toolrig.workers.host import run_attempt_blocking

    workflow_id = DBOS.workflow_id or f"{task_id}#?"
    try:
        return run_attempt_blocking(root, task_id, workflow_id, DBOS.executor_id)
    finally:
        _slots.free(workflow_id)


class DbosEngine:
    def __init__(self, database_url: str, state_dir: str) -> None:
        self.system_file: Path | None = None
        if database_url.startswith("sqlite"):
            self.system_file = Path(state_dir) / "dbos.sqlite"
            self.system_url = f"sqlite:///{self.system_file}"
        else:
            self.system_url = database_url
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.root = "."
        self.concurrency = 1
        self._dbos: DBOS | None = None

    def start(self, *, root: str, concurrency: int) -> None:
        self.root = root
        self.concurrency = concurrency
        if self.system_file is not None:  # DBOS opens it by name and follows links: a committed one is refused
            prepare_database(self.system_file)
        config: DBOSConfig = {
            "name": APP,
            "system_database_url": self.system_url,
            "executor_id": self.worker_id,
            "application_version": APP_VERSION,
            "log_level": os.environ.get("TOOLRIG_DBOS_LOG_LEVEL", "WARNING"),
        }
        self._dbos = DBOS(config=config)
        DBOS.launch()
        DBOS.register_queue(
            QUEUE, worker_concurrency=concurrency, polling_interval_sec=5.0, on_conflict="always_update"
        )

    @property
    def wake(self) -> threading.Event:
        return _slots.freed

    def capacity(self) -> int:
        return max(0, self.concurrency - len(_slots))

    def submit(self, workflow_id: str, task_id: str, *, counted: bool = True) -> None:
        if counted:
            _slots.take(workflow_id)
        try:
            with SetWorkflowID(workflow_id):
                DBOS.start_workflow(_attempt, self.root, task_id)
        except BaseException:
            _slots.free(workflow_id)
            raise

    def recover(self, dead_worker_ids: list[str]) -> int:
        if not dead_worker_ids:
            return 0
        return len(DBOS._recover_pending_workflows(dead_worker_ids))

    def stop(self) -> None:
        if self._dbos is not None:
            DBOS.destroy(workflow_completion_timeout_sec=5)
            self._dbos = None
