"""OpenTelemetry for runs, model calls and tool calls (docs/telemetry.md).

Off unless configured (a ``telemetry:`` section that enables it, or the standard ``OTEL_EXPORTER_OTLP_*``
endpoint variables). Off, nothing here imports OpenTelemetry: a Rig holds ``telemetry = None``, a run or a
model request checks that once, a tool call pays nothing (no extension member joins the executor), and
trace propagation returns at a module flag. On, ``toolrig.telemetry.setup`` loads the SDK.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from toolrig.trace_context import (
    continue_trace,
    continues_client_trace,
    current_carrier,
    inject_trace,
    state,
    trace_meta,
    wanted,
)

if TYPE_CHECKING:
    from toolrig.config import TelemetryConfig
    from toolrig.gate import Extensions
    from toolrig.telemetry.setup import Telemetry


R = TypeVar("R")
__all__ = [
    "chat_span",
    "continue_trace",
    "continues_client_trace",
    "continues_task_trace",
    "current_carrier",
    "inject_trace",
    "install",
    "trace_meta",
    "traced_run",
    "wanted",
]


def install(config: TelemetryConfig, extensions: Extensions) -> Telemetry | None:
    """Called once by a Rig being built: the Rig's telemetry (None when off), its tool calls traced."""
    if not wanted(config):
        return None
    from toolrig.telemetry.setup import telemetry_for
    from toolrig.telemetry.tools import ToolSpans

    telemetry = telemetry_for(config)
    ToolSpans(telemetry).install(extensions)
    state.on = True
    return telemetry


def traced_run(method: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """An ``invoke_agent`` span around a run's method (``_Run._guarded``) when its Rig has telemetry."""

    @functools.wraps(method)
    async def run(self: Any, *args: Any, **kwargs: Any) -> R:
        telemetry = getattr(self.rig, "telemetry", None)
        if telemetry is None:
            return await method(self, *args, **kwargs)
        from toolrig.telemetry.runs import RunSpan

        with RunSpan(telemetry, self) as span:
            result = await method(self, *args, **kwargs)
            span.finished(result)
            return result

    return run


class _NoChat:
    """What ``chat_span`` gives when telemetry is off: a context manager that records nothing."""

    def __enter__(self) -> _NoChat:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def chunk(self) -> None:
        return None

    def done(self, complete: Any) -> None:
        return None


_NO_CHAT = _NoChat()


def chat_span(rig: Any, settings: Any) -> Any:
    """A ``chat`` span for one model request (``with``; ``.chunk()`` per streamed item, ``.done(turn)``)."""
    telemetry = getattr(rig, "telemetry", None)
    if telemetry is None:
        return _NO_CHAT
    from toolrig.telemetry.runs import ChatSpan

    return ChatSpan(telemetry, settings)


def continues_task_trace(method: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Run a durable task's attempt (``method(access, task_id, ...)``) inside the trace that queued it."""

    @functools.wraps(method)
    async def attempt(access: Any, task_id: str, *args: Any, **kwargs: Any) -> R:
        if not wanted(access.config.telemetry):
            return await method(access, task_id, *args, **kwargs)
        task = access.records.task(task_id)
        if task is None:
            return await method(access, task_id, *args, **kwargs)
        tracer = _start_propagating(access.config.telemetry)
        from toolrig.telemetry.durable import task_span

        with task_span(tracer, access.records, task):
            return await method(access, task_id, *args, **kwargs)

    return attempt


def _start_propagating(config: TelemetryConfig) -> Any:
    """A worker process about to run a task: the providers built now, so the task's own span is exported."""
    from toolrig.telemetry.setup import telemetry_for

    telemetry = telemetry_for(config)
    state.on = True
    return telemetry.tracer
