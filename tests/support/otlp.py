"""A real OTLP/HTTP receiver on loopback: decodes what the OpenTelemetry exporter sends with opentelemetry-proto.

The OpenTelemetry Collector is packaged for neither Debian nor PyPI; the exporter's own wire messages,
decoded by the official protobuf classes, are what a collector would read. Spans are kept as decoded.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass
class Span:
    """One decoded span: ids as bytes, attributes as Python values."""

    name: str
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    kind: int
    attributes: dict[str, Any]
    status_code: int
    links: list[tuple[bytes, bytes]]
    service: str
    start: int
    end: int
    scope: str  # the instrumentation scope: "toolrig" for ours (the provider and MCP SDKs trace too)


@dataclass
class Receiver:
    url: str
    spans: list[Span] = field(default_factory=list)
    metrics: dict[str, list[Any]] = field(default_factory=dict)  # metric name -> its data points
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_traces(self, request: ExportTraceServiceRequest) -> None:
        with self.lock:
            for resource_spans in request.resource_spans:
                resource = {a.key: value_of(a.value) for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    for s in scope.spans:
                        self.spans.append(
                            Span(
                                name=s.name,
                                trace_id=s.trace_id,
                                span_id=s.span_id,
                                parent_span_id=s.parent_span_id,
                                kind=s.kind,
                                attributes={a.key: value_of(a.value) for a in s.attributes},
                                status_code=s.status.code,
                                links=[(link.trace_id, link.span_id) for link in s.links],
                                service=str(resource.get("service.name", "")),
                                start=s.start_time_unix_nano,
                                end=s.end_time_unix_nano,
                                scope=scope.scope.name,
                            )
                        )

    def add_metrics(self, request: ExportMetricsServiceRequest) -> None:
        with self.lock:
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        kind = metric.WhichOneof("data")
                        points = list(getattr(metric, kind).data_points) if kind else []
                        self.metrics.setdefault(metric.name, []).extend(points)

    def named(self, prefix: str) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.name.startswith(prefix)]

    def in_trace(self, trace_id: bytes) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.add_traces(request)
                reply = ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics":
                metrics_request = ExportMetricsServiceRequest()
                metrics_request.ParseFromString(body)
                receiver.add_metrics(metrics_request)
                reply = ExportMetricsServiceResponse().SerializeToString()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            return None

    return Handler


def start_receiver() -> tuple[Receiver, ThreadingHTTPServer]:
    receiver = Receiver("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
