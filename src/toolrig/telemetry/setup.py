"""Building the OpenTelemetry providers from the ``telemetry:`` section and the standard ``OTEL_*`` variables.

Imported only when telemetry is on (``toolrig.telemetry.install``): this is where the SDK is loaded. The
providers are process-wide, as OpenTelemetry's are: one per endpoint, shared by every Rig that names it.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator

from toolrig.telemetry import names

if TYPE_CHECKING:
    from toolrig.config import TelemetryConfig

_lock = threading.Lock()
_built: dict[tuple[str | None, str, str | None], Telemetry] = {}

# Bucket boundaries the GenAI conventions recommend for these two histograms.
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)


@dataclass(frozen=True)
class Telemetry:
    """A tracer, a meter and their instruments, plus whether content may be recorded; one per endpoint."""

    tracer: trace.Tracer
    meter: metrics.Meter
    tracer_provider: Any
    meter_provider: Any
    capture_content: bool
    token_usage: metrics.Histogram
    duration: metrics.Histogram
    first_chunk: metrics.Histogram
    tool_calls: metrics.Counter
    approval_wait: metrics.Histogram
    commands: metrics.Counter

    def with_capture(self, capture: bool) -> Telemetry:
        from dataclasses import replace

        return self if capture == self.capture_content else replace(self, capture_content=capture)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export everything recorded so far (tests, and a short-lived command before it exits)."""
        ok = bool(self.tracer_provider.force_flush(timeout_millis))
        ok = bool(self.meter_provider.force_flush(timeout_millis)) and ok
        # Libraries' own spans (the MCP and provider SDKs trace too) go to the global provider, if another.
        for other in (trace.get_tracer_provider(), metrics.get_meter_provider()):
            if other is not self.tracer_provider and other is not self.meter_provider and hasattr(other, "force_flush"):
                ok = bool(other.force_flush(timeout_millis)) and ok
        return ok


def telemetry_for(config: TelemetryConfig) -> Telemetry:
    """The providers for this section (built on first use): its endpoint, else the application's own."""
    protocol = config.protocol or _clean(os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")) or "http/protobuf"
    key = (config.endpoint, protocol, config.service_name)
    with _lock:
        built = _built.get(key)
        if built is None:
            built = _built[key] = _build(config, protocol)
    return built.with_capture(config.capture_content)


def _clean(value: str | None) -> str | None:
    return value.strip() or None if value else None


def _build(config: TelemetryConfig, protocol: str) -> Telemetry:
    own_endpoint = config.endpoint is not None or any(
        _clean(v)
        for v in (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"), os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    )
    if not own_endpoint:
        # `enabled: true` with no endpoint: the application configured OpenTelemetry itself (logfire, a
        # collector's auto-instrumentation): toolrig's spans join its providers.
        tracer_provider: Any = trace.get_tracer_provider()
        meter_provider: Any = metrics.get_meter_provider()
    else:
        attributes = {"service.name": config.service_name} if config.service_name else {}
        if not config.service_name and not _clean(os.environ.get("OTEL_SERVICE_NAME")):
            attributes["service.name"] = "toolrig"
        resource = Resource.create(attributes)  # also reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
        span_exporter, metric_exporter = _exporters(config.endpoint, protocol)
        # the sampler from OTEL_TRACES_SAMPLER(_ARG); ids from a generator of our own (see _OwnRandomIds)
        tracer_provider = TracerProvider(resource=resource, id_generator=_OwnRandomIds())
        tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
        reader = PeriodicExportingMetricReader(metric_exporter)
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        _set_globals(tracer_provider, meter_provider)
    return _instruments(tracer_provider, meter_provider, config.capture_content)


class _OwnRandomIds(IdGenerator):
    """Random span and trace ids from a generator of their own, not the ``random`` module's global one.

    The SDK's default draws from the global state in whatever thread makes a span (the provider SDKs trace
    themselves once a provider is global): the program's seeded randomness, or a property test's, moved under it.
    """

    def __init__(self) -> None:
        self._random = random.Random()  # noqa: S311 - ids need to be unique, not secret (as the SDK's own)

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1  # 0 is the invalid span id

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128) or 1


def _set_globals(tracer_provider: Any, meter_provider: Any) -> None:
    """Become the process's providers unless the application set its own (whose spans then nest in ours)."""
    if type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider":
        trace.set_tracer_provider(tracer_provider)
    if type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider":
        metrics.set_meter_provider(meter_provider)


def _exporters(endpoint: str | None, protocol: str) -> tuple[Any, Any]:
    """OTLP exporters; given no endpoint they read OTEL_EXPORTER_OTLP_* (endpoint, headers, TLS) themselves."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        insecure = endpoint.startswith("http://") if endpoint else None
        return GrpcSpans(endpoint=endpoint, insecure=insecure), GrpcMetrics(endpoint=endpoint, insecure=insecure)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if endpoint is None:
        return OTLPSpanExporter(), OTLPMetricExporter()
    base = endpoint.rstrip("/")  # as OTEL_EXPORTER_OTLP_ENDPOINT: the signal's path is added
    return OTLPSpanExporter(endpoint=f"{base}/v1/traces"), OTLPMetricExporter(endpoint=f"{base}/v1/metrics")


def _instruments(tracer_provider: Any, meter_provider: Any, capture: bool) -> Telemetry:
    from toolrig.version import __version__

    meter = meter_provider.get_meter("toolrig", __version__)
    return Telemetry(
        tracer=tracer_provider.get_tracer("toolrig", __version__),
        meter=meter,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture,
        token_usage=meter.create_histogram(
            names.TOKEN_USAGE,
            unit="{token}",
            description="Tokens per model request.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        ),
        duration=meter.create_histogram(
            names.OPERATION_DURATION,
            unit="s",
            description="Model request and agent run durations.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        first_chunk=meter.create_histogram(
            names.FIRST_CHUNK_METRIC,
            unit="s",
            description="Time from a streamed request to its first chunk.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        tool_calls=meter.create_counter(
            names.TOOL_CALLS, unit="{call}", description="Tool calls by tool, decision and outcome."
        ),
        approval_wait=meter.create_histogram(
            names.APPROVAL_WAIT,
            unit="s",
            description="How long a call waited for its approval.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        commands=meter.create_counter(
            names.COMMANDS, unit="{command}", description="run_command calls by the containment in force."
        ),
    )


def wall_ns(perf_started: float) -> int:
    """A ``time.perf_counter()`` reading as epoch nanoseconds (span start times are wall-clock)."""
    return time.time_ns() - int((time.perf_counter() - perf_started) * 1e9)


def shutdown(endpoint: str | None = None) -> None:
    """Flush and stop the providers toolrig built (for ``endpoint`` only, when given): a receiver going away."""
    with _lock:
        keys = [key for key in _built if endpoint is None or key[0] == endpoint]
        built = [_built.pop(key) for key in keys]
    for telemetry in built:
        if isinstance(telemetry.tracer_provider, TracerProvider):
            telemetry.tracer_provider.shutdown()
        if isinstance(telemetry.meter_provider, MeterProvider):
            telemetry.meter_provider.shutdown()
