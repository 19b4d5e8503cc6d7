"""W3C trace context in and out of toolrig: MCP requests served and sent, durable tasks queued and run.

Apart from ``toolrig.telemetry`` (whose spans read the executor's calls, so it sits above them) so that the
MCP client and server (``toolrig.sources``, ``toolrig.adapters``) can import it: nothing here imports toolrig.
``state.on`` turns on the first time a Rig in this process turns telemetry on; until then every function
returns at that flag, without OpenTelemetry.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

R = TypeVar("R")


class _State:
    on = False  # process-wide, as OpenTelemetry's own propagator is


state = _State()


class TraceSettings(Protocol):
    """The part of ``telemetry:`` (``toolrig.config.TelemetryConfig``) that says whether it is on."""

    @property
    def enabled(self) -> bool | None: ...

    @property
    def endpoint(self) -> str | None: ...


def wanted(config: TraceSettings) -> bool:
    """On when the section says so, else when an OTLP endpoint is configured; OTEL_SDK_DISABLED wins.

    Here, not in ``toolrig.telemetry``, so that the durable records below the tools can ask it when a task is queued.
    """
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if config.enabled is not None:
        return config.enabled
    endpoints = (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"), os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    return config.endpoint is not None or any(value and value.strip() for value in endpoints)


def inject_trace(carrier: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Add the current trace context (W3C ``traceparent``, ``tracestate``) to an outgoing request's carrier."""
    if state.on:
        from opentelemetry.propagate import inject

        inject(carrier)
    return carrier


@contextmanager
def continue_trace(carrier: Any) -> Iterator[None]:
    """Within the block, spans continue the trace a request carried (its ``traceparent``), if any.

    ``carrier`` is input from a client: only string values under the W3C names are read; a malformed one
    is ignored by the propagator (a new trace starts).
    """
    if not state.on or not carrier or not hasattr(carrier, "get"):
        yield
        return
    parent = carrier.get("traceparent")
    if not isinstance(parent, str) or len(parent) > 128:
        yield
        return
    from opentelemetry import context
    from opentelemetry.propagate import extract

    fields = {"traceparent": parent}
    trace_state = carrier.get("tracestate")
    if isinstance(trace_state, str) and len(trace_state) <= 512:
        fields["tracestate"] = trace_state
    token = context.attach(extract(fields))
    try:
        yield
    finally:
        context.detach(token)


def current_carrier() -> dict[str, str]:
    """The current trace context as a small dict to store with work done later (a durable task)."""
    return dict(inject_trace({})) if state.on else {}


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
        if not state.on:
            return await method(self, ctx, params)
        with continue_trace(_request_carrier(ctx, params)):
            return await method(self, ctx, params)

    return serve


def trace_meta() -> Any:
    """``_meta`` for an outgoing MCP request: the current trace context, or None when there is none to pass."""
    if not state.on:
        return None
    carrier = current_carrier()
    return carrier or None
