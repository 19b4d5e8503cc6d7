"""A durable task's attempt runs in the trace that queued it (the rows: ``toolrig.durable.traces``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from toolrig.durable.traces import recalled


@contextmanager
def task_span(tracer: Any, records: Any, task: dict[str, Any]) -> Iterator[None]:
    """Within the block, the task's run continues the trace that queued it (or starts one, for a cron firing)."""
    from toolrig.telemetry import names
    from toolrig.trace_context import continue_trace

    with continue_trace(recalled(records, task["id"])):
        attributes = {names.TASK_ID: task["id"], names.TASK_KIND: task.get("kind") or "task"}
        with tracer.start_as_current_span(f"toolrig.task {attributes[names.TASK_KIND]}", attributes=attributes):
            yield
