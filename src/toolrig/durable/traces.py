"""Durable tasks continue the trace that queued them, in whichever worker process runs them.

The trace context of the span current when a task is queued (a tool call's, a run's) is kept in a table of
its own beside the task records (``toolrig_task_traces``; created if missing, so no migration of theirs);
the attempt that runs the task continues from it (``toolrig.telemetry.durable.task_span``). Loaded only when
telemetry is on.
"""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa

_metadata = sa.MetaData()
traces = sa.Table(
    "toolrig_task_traces",
    _metadata,
    sa.Column("task_id", sa.String(120), primary_key=True),
    sa.Column("traceparent", sa.String(128), nullable=False),
    sa.Column("tracestate", sa.String(512)),
)
_created: set[int] = set()  # engines whose table is known to exist (id of the engine)
_lock = threading.Lock()


def _ensure(engine: Any) -> None:
    with _lock:
        if id(engine) not in _created:
            _metadata.create_all(engine, checkfirst=True)
            _created.add(id(engine))


def remember(records: Any, task_id: str, carrier: dict[str, str]) -> None:
    """Keep the trace context a task was queued under, for the attempt that will run it."""
    parent = carrier.get("traceparent")
    if not parent:
        return
    _ensure(records.engine)
    row = {"task_id": task_id, "traceparent": parent[:128], "tracestate": carrier.get("tracestate", "")[:512]}
    with records.engine.begin() as conn:
        conn.execute(sa.delete(traces).where(traces.c.task_id == task_id))
        conn.execute(sa.insert(traces).values(**row))


def recalled(records: Any, task_id: str) -> dict[str, str]:
    _ensure(records.engine)
    with records.engine.begin() as conn:
        row = conn.execute(sa.select(traces).where(traces.c.task_id == task_id)).first()
    if row is None:
        return {}
    carrier = {"traceparent": row.traceparent}
    if row.tracestate:
        carrier["tracestate"] = row.tracestate
    return carrier
