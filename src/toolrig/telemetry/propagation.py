"""W3C trace context in and out of toolrig: moved to ``toolrig.trace_context`` (below sources and adapters)."""

from __future__ import annotations

from toolrig.trace_context import (
    continue_trace,
    continues_client_trace,
    current_carrier,
    inject_trace,
    state,
    trace_meta,
)

__all__ = ["continue_trace", "continues_client_trace", "current_carrier", "inject_trace", "state", "trace_meta"]
