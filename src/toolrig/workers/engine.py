"""The narrow interface between workers and a workflow engine, so a second engine (Temporal) fits later.

An engine starts attempts of tasks by workflow id, exactly once per id even when several workers submit
the same id, runs them on this process (the worker submits only as many as ``capacity`` allows), and re-runs
the attempts of a dead worker elsewhere. Everything else (what is due, what a run does, task status) is
toolrig's, in ``store``.
"""

from __future__ import annotations

import threading
from typing import Protocol


class Engine(Protocol):
    worker_id: str

    def start(self, *, root: str, concurrency: int) -> None:
        """Connect, register this worker and begin taking queued attempts."""

    @property
    def wake(self) -> threading.Event:
        """Set when one of this worker's attempts ends (a slot is free); the worker's poll waits on it."""

    def capacity(self) -> int:
        """How many more attempts this worker may start now (its concurrency less those still running)."""

    def submit(self, workflow_id: str, task_id: str, *, counted: bool = True) -> None:
        """Start one attempt here; a second submit of the same ``workflow_id`` does nothing.

        ``counted=False``: an attempt that may already run elsewhere (a dead worker's hand-over), not a slot.
        """

    def recover(self, dead_worker_ids: list[str]) -> int:
        """Queue again the attempts that the dead workers had started; how many."""

    def stop(self) -> None: ...


def open_engine(database_url: str, state_dir: str) -> Engine:
    """The one engine toolrig has today: DBOS Transact (imported here, on first use only)."""
    from toolrig.workers.dbos_engine import DbosEngine

    return DbosEngine(database_url, state_dir)
