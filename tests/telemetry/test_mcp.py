"""W3C trace context across MCP: a served tools/call continues its client's trace; a remote call carries ours."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.otlp import Receiver
from tests.support.sample_tools import agent_tools
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.telemetry import names

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent


def traced(otlp: Receiver, **config: object) -> dict[str, object]:
    return {"telemetry": {"endpoint": otlp.url, "service_name": "toolrig-tests"}, **config}


async def test_a_served_tools_call_continues_the_trace_its_traceparent_names(workspace: Path, otlp: Receiver) -> None:
    from mcp import Client

    from toolrig.adapters.mcp_server import McpToolServer

    rig = Rig(workspace, config=traced(otlp), registry=Registry(agent_tools()))
    assert rig.telemetry is not None
    client_span = rig.telemetry.tracer.start_span("client call")  # stands for the calling client's span
    context = client_span.get_span_context()
    traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-01"
    server = McpToolServer(rig)
    async with server.running(), Client(server.server) as client:
        result = await client.call_tool("add", {"a": 2, "b": 2}, meta={"traceparent": traceparent})  # type: ignore[typeddict-unknown-key]
        untraced = await client.call_tool("add", {"a": 1, "b": 1})
    client_span.end()
    assert not result.is_error and not untraced.is_error
    assert rig.telemetry.force_flush()
    served = [s for s in otlp.named("execute_tool add") if s.trace_id == context.trace_id.to_bytes(16, "big")]
    [span] = served
    assert span.parent_span_id == context.span_id.to_bytes(8, "big")
    assert span.attributes[names.ORIGIN] == "mcp"
    rig.close()


@pytest.mark.parametrize("malformed", ["00-zz-yy-01", "x" * 200, "00-" + "0" * 32 + "-" + "0" * 16 + "-01"])
async def test_a_malformed_traceparent_starts_a_new_trace(workspace: Path, otlp: Receiver, malformed: str) -> None:
    from mcp import Client

    from toolrig.adapters.mcp_server import McpToolServer

    rig = Rig(workspace, config=traced(otlp), registry=Registry(agent_tools()))
    server = McpToolServer(rig)
    async with server.running(), Client(server.server) as client:
        result = await client.call_tool("add", {"a": 3, "b": 4}, meta={"traceparent": malformed})  # type: ignore[typeddict-unknown-key]
    assert not result.is_error
    assert rig.telemetry is not None and rig.telemetry.force_flush()
    rig.close()


async def test_a_remote_mcp_call_carries_the_calls_span_as_its_traceparent(workspace: Path, otlp: Receiver) -> None:
    command = {"command": sys.executable, "args": [str(HERE.parent / "support" / "mcp_trace_server.py")]}
    rig = Rig(workspace, config=traced(otlp, mcp_servers={"peer": command}), registry=Registry(agent_tools()))
    try:
        result = await rig.call("peer/seen_meta", {})
    finally:
        await rig.aclose()
    assert not result.is_error, result
    seen = result.output or {}
    assert rig.telemetry is not None and rig.telemetry.force_flush()
    [call] = [s for s in otlp.spans if s.attributes.get(names.TOOL_CALL_ID) == result.meta.call_id]
    _, trace_id, span_id, _ = seen["structured"]["traceparent"].split("-")
    assert bytes.fromhex(trace_id) == call.trace_id
    # The server saw our call's span, or a span under it (the MCP SDK's own "MCP send" span, when it traces).
    by_id = {s.span_id: s for s in otlp.in_trace(call.trace_id)}
    seen_span = bytes.fromhex(span_id)
    while seen_span != call.span_id:
        seen_span = by_id[seen_span].parent_span_id
