"""OTLP over gRPC: the same spans reach a real gRPC receiver built on the official service definitions."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.otlp import Receiver
from tests.support.sample_tools import agent_tools
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.telemetry import names

pytestmark = pytest.mark.anyio


class _Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def Export(self, request: Any, context: Any) -> ExportTraceServiceResponse:
        self.receiver.add_traces(request)
        return ExportTraceServiceResponse()


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def Export(self, request: Any, context: Any) -> ExportMetricsServiceResponse:
        self.receiver.add_metrics(request)
        return ExportMetricsServiceResponse()


@pytest.fixture(scope="module")
def grpc_otlp() -> Iterator[Receiver]:
    receiver = Receiver("")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(receiver), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(receiver), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    receiver.url = f"http://127.0.0.1:{port}"
    yield receiver
    from toolrig.telemetry.setup import shutdown

    shutdown(receiver.url)  # flushed while the receiver still listens
    server.stop(grace=None)


async def test_spans_and_metrics_are_exported_over_grpc(workspace: Path, grpc_otlp: Receiver) -> None:
    config = {"telemetry": {"endpoint": grpc_otlp.url, "protocol": "grpc"}}
    async with Rig(workspace, config=config, registry=Registry(agent_tools())) as rig:
        result = await rig.call("add", {"a": 20, "b": 22})
        assert rig.telemetry is not None and rig.telemetry.force_flush()
    [span] = [s for s in grpc_otlp.spans if s.attributes.get(names.TOOL_CALL_ID) == result.meta.call_id]
    assert span.name == "execute_tool add" and span.attributes[names.DECISION] == "allow"
    assert names.TOOL_CALLS in grpc_otlp.metrics
