"""OpenTelemetry for runs, model calls and tool calls (docs/telemetry.md).

Off unless configured (a ``telemetry:`` section that enables it, or the standard ``OTEL_EXPORTER_OTLP_*``
endpoint variables). Off, nothing here imports OpenTelemetry: a Rig holds ``telemetry = None``, a run or a
model request checks that once, a tool call pays nothing (no extension member joins the executor), and
trace propagation returns at a module flag. On, ``toolrig.telemetry.setup`` loads the SDK.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from toolrig.config import TelemetryConfig
    from toolrig.executor import Extensions
    from toolrig.telemetry.setup import Telemetry

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_propagating = False  # set once any Rig in this process turned telemetry on: trace context then travels

R = TypeVar("R")


def wanted(config: TelemetryConfig) -> bool:
    """On when the section says so, else when an OTLP endpoint is configured; OTEL_SDK_DISABLED wins."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if config.enabled is not None:
        return config.enabled
    return config.endpoint is not None or any(os.environ.get(name, "").strip() for name in _ENDPOINTS)


def install(config: TelemetryConfig, extensions: Extensions) -> Telemetry | None:
    """Called once by a Rig being built: the Rig's telemetry (None when off), its tool calls traced."""
    if not wanted(config):
        return None
    global _propagating
    from toolrig.telemetry.setup import telemetry_for
    from toolrig.telemetry.tools import ToolSpans

    telemetry = telemetry_for(config)
    ToolSpans(telemetry).install(extensions)
    _propagating = True
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


def inject_trace(carrier: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Add the current trace context (W3C ``traceparent``, ``tracestate``) to an outgoing request's carrier."""
    if _propagating:
        from opentelemetry.propagate import inject

        inject(carrier)
    return carrier


@contextmanager
def continue_trace(carrier: Any) -> Iterator[None]:
    """Within the block, spans continue the trace a request carried (its ``traceparent``), if any.

    ``carrier`` is input from a client: only string values under the W3C names are read; a malformed one
    is ignored by the propagator (a new trace starts).
    """
    if not _propagating or not carrier or not hasattr(carrier, "get"):
        yield
        return
    parent = carrier.get("traceparent")
    if not isinstance(parent, str) or len(parent) > 128:
        yield
        return
    from opentelemetry import context
    from opentelemetry.propagate import extract

    fields = {"traceparent": parent}
    state = carrier.get("tracestate")
    if isinstance(state, str) and len(state) <= 512:
        fields["tracestate"] = state
    token = context.attach(extract(fields))
    try:
        yield
    finally:
        context.detach(token)


def current_carrier() -> dict[str, str]:
    """The current trace context as a small dict to store with work done later (a durable task)."""
    return dict(inject_trace({})) if _propagating else {}


def _request_carrier(ctx: Any, params: Any) -> dict[str, Any]:
    """The W3C trace context an MCP request carried: ``params._meta`` first, else its HTTP headers."""
    meta = getattr(params, "meta", None)
    if isinstance(meta, dict) and "traceparent" in meta:
        return meta
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is not None and hasattr(headers, "get"):
        return {key: headers.get(key) for key in ("traceparent", "tracestate") if headers.get(key) is not None}
    return {}


def continues_client_trace(method: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Serve an MCP ``tools/call`` (``method(self, ctx, params)``) inside the trace its client started."""

    @functools.wraps(method)
    async def serve(self: Any, ctx: Any, params: Any) -> R:
        if not _propagating:
            return await method(self, ctx, params)
        with continue_trace(_request_carrier(ctx, params)):
            return await method(self, ctx, params)

    return serve


def trace_meta() -> Any:
    """``_meta`` for an outgoing MCP request: the current trace context, or None when there is none to pass."""
    if not _propagating:
        return None
    carrier = current_carrier()
    return carrier or None
