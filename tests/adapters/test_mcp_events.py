"""Resumable streamable HTTP: the event store, and a raw HTTP client that loses its stream and resumes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from tests.support.conformance_peers import fixture_server
from toolrig.adapters.mcp_events import MemoryEventStore

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def note(method: str) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method=method)


def test_an_empty_store_still_counts_as_a_store() -> None:
    assert MemoryEventStore()  # the SDK turns resumability off for a falsy store


async def test_replay_sends_only_the_later_events_of_the_same_stream() -> None:
    store = MemoryEventStore()
    priming = await store.store_event("a", None)
    first = await store.store_event("a", note("one"))
    await store.store_event("b", note("other stream"))
    second = await store.store_event("a", note("two"))
    sent: list[tuple[str | None, str]] = []

    async def send(event: Any) -> None:
        sent.append((event.event_id, event.message.method))

    assert await store.replay_events_after(priming, send) == "a"
    assert sent == [(first, "one"), (second, "two")]
    sent.clear()
    assert await store.replay_events_after(second, send) == "a"
    assert sent == []


async def test_an_event_id_the_store_never_gave_replays_nothing() -> None:
    store = MemoryEventStore()
    await store.store_event("a", note("one"))
    sent: list[Any] = []

    async def send(event: Any) -> None:
        sent.append(event)

    for bogus in ("", "1", "a:0", "../../etc", "x" * 10_000):
        assert await store.replay_events_after(bogus, send) is None
    assert sent == []


async def test_event_ids_are_unguessable_and_the_store_keeps_only_the_newest() -> None:
    store = MemoryEventStore(max_events=3)
    ids = [await store.store_event("a", note(f"n{i}")) for i in range(5)]
    assert len(set(ids)) == 5 and all(len(i) >= 16 for i in ids)
    assert store.size == 3

    async def send(event: Any) -> None:
        pass

    assert await store.replay_events_after(ids[2], send) == "a"
    # An evicted id is remembered for its stream: what is still held after it is replayed.
    assert await store.replay_events_after(ids[0], send) == "a"


# ---------------------------------------------------------------------------------------- bounded by bytes (F6)


def response(request_id: int, blob: int) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"content": [{"type": "text", "text": "x" * blob}]})


async def test_the_reported_case_large_results_are_bounded_by_bytes_not_by_event_count() -> None:
    """60 results of 4 x 1 MB images held ~300 MB under a 4096-event bound; now the byte budget holds."""
    store = MemoryEventStore(max_bytes=8 * 1024 * 1024, max_stream_bytes=6 * 1024 * 1024)
    for i in range(60):
        await store.store_event(f"stream-{i}", response(i, 1_000_000))
    assert store.held_bytes <= 8 * 1024 * 1024 and store.size < 60


@st.composite
def traffic(draw: st.DrawFn) -> list[tuple[str, str, int]]:
    """(stream, kind, bytes): priming events, progress notes and results on a few streams."""
    ops = []
    for _ in range(draw(st.integers(1, 40))):
        stream = draw(st.sampled_from(["1", "2", "3", "_GET_stream"]))
        kind = draw(st.sampled_from(["prime", "note", "result"]))
        ops.append((stream, kind, draw(st.sampled_from([0, 100, 1_000, 4_000]))))
    return ops


@settings(max_examples=120, deadline=None)
@given(traffic(), st.sampled_from([2_000, 8_000, 40_000]), st.sampled_from([1_000, 5_000, 40_000]))
def test_any_traffic_stays_within_the_byte_budgets_and_every_resume_ends_its_call_or_replays_it(
    ops: list[tuple[str, str, int]], max_bytes: int, max_stream: int
) -> None:
    import anyio

    async def play() -> None:
        store = MemoryEventStore(max_bytes=max_bytes, max_stream_bytes=max_stream)
        given_ids: list[tuple[str, str]] = []
        for n, (stream, kind, blob) in enumerate(ops):
            if kind == "prime":
                message: Any = None
            elif kind == "note":
                message = JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"b": "x" * blob})
            else:
                message = response(n, blob)
            given_ids.append((await store.store_event(stream, message), stream))
            assert store.held_bytes <= max_bytes
            assert all(size <= min(max_stream, max_bytes) for size in store._stream_bytes.values())
            assert store.held_bytes == sum(e.size for e in store._events.values())
        for event_id, stream in given_ids:
            sent: list[Any] = []

            async def send(event: Any, sent: list[Any] = sent) -> None:
                sent.append(event)

            assert await store.replay_events_after(event_id, send) == stream  # every id it gave is known
            ids = [e.event_id for e in sent if e.event_id is not None]
            order = [i for i, _ in given_ids]
            assert ids == sorted(ids, key=order.index) and all(order.index(i) > order.index(event_id) for i in ids)
            answers = [e.message for e in sent if hasattr(e.message, "result") or hasattr(e.message, "error")]
            dropped = [m for m in answers if hasattr(m, "error")]
            assert len(dropped) <= 1 and all(m.error.code == -32603 for m in dropped)
            if dropped:  # the clear answer names a request of this stream whose result was lost after this id
                assert dropped[0].id in lost_after(ops, order.index(event_id), stream)
            elif lost_after(ops, order.index(event_id), stream) and not answers:
                # a result came after this id and none is replayed: it must still be held (nothing was lost)
                later = [i for i, s in given_ids[order.index(event_id) + 1 :] if s == stream]
                assert all(i in store._events for i in later)

    anyio.run(play)


def lost_after(ops: list[tuple[str, str, int]], index: int, stream: str) -> set[int]:
    return {n for n, (s, kind, _) in enumerate(ops) if s == stream and kind == "result" and n > index}


# ---------------------------------------------------------------------------------------- over the wire


def sse_events(response: httpx2.Response) -> Iterator[dict[str, str]]:
    """The events of an SSE body as they arrive: {'id', 'retry', 'data'} (fields that came)."""
    event: dict[str, str] = {}
    for line in response.iter_lines():
        if not line:
            if event:
                yield event
            event = {}
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        event[field] = event[field] + "\n" + value if field == "data" and field in event else value


def rpc(method: str, params: dict[str, Any], id: int | None = None) -> str:
    message = JSONRPCRequest(jsonrpc="2.0", id=id, method=method, params=params) if id is not None else None
    body = message.model_dump(by_alias=True, exclude_none=True) if message else {"jsonrpc": "2.0", "method": method}
    return json.dumps(body)


def open_session(client: httpx2.Client, url: str) -> dict[str, str]:
    """Initialize at 2025-11-25 (the version that resumes streams); the headers later requests carry."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    with client.stream("POST", url, content=rpc("initialize", params, 1), headers=HEADERS) as response:
        assert response.status_code == 200
        session = response.headers["mcp-session-id"]
        response.read()
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION}
    assert client.post(url, content=rpc("notifications/initialized", {}), headers=headers).status_code == 202
    return headers


def result_of(events: Iterator[dict[str, str]], request_id: int) -> tuple[dict[str, Any] | None, str | None]:
    """Read until the response to ``request_id`` (or the stream's end): (the response, the last event id)."""
    last = None
    for event in events:
        last = event.get("id", last)
        if event.get("data"):
            message = json.loads(event["data"])
            if message.get("id") == request_id:
                return message, last
    return None, last


def resume(client: httpx2.Client, url: str, headers: dict[str, str], last_id: str, request_id: int) -> dict[str, Any]:
    get_headers = {**headers, "accept": "text/event-stream", "last-event-id": last_id}
    get_headers.pop("content-type")
    with client.stream("GET", url, headers=get_headers) as response:
        assert response.status_code == 200
        message, _ = result_of(sse_events(response), request_id)
    assert message is not None, "the resumed stream did not carry the call's result"
    return message


@pytest.mark.slow
@pytest.mark.servers
def test_a_stream_the_server_closes_mid_call_resumes_with_last_event_id_and_delivers_the_result(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    with (
        fixture_server(workspace, toolrig_home, tmp_path / "site", "--sse-poll-after", "0") as url,
        httpx2.Client(timeout=30) as client,
    ):
        headers = open_session(client, url)
        call = rpc("tools/call", {"name": "test_reconnection", "arguments": {}}, 7)
        with client.stream("POST", url, content=call, headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = list(sse_events(response))
        priming = events[0]
        assert priming["id"] and priming.get("data", "") == "" and priming["retry"] == "1000"
        message, last_id = result_of(iter(events), 7)
        assert message is None, "the server was told to close the stream before the result"
        assert last_id is not None
        result = resume(client, url, headers, last_id, 7)
        assert result["result"]["isError"] is False
        assert "Reconnection test completed." in result["result"]["content"][0]["text"]


@pytest.mark.slow
@pytest.mark.servers
def test_a_client_that_drops_its_stream_mid_call_gets_the_result_when_it_resumes(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    with (
        fixture_server(workspace, toolrig_home, tmp_path / "site") as url,
        httpx2.Client(timeout=30) as client,
    ):
        headers = open_session(client, url)
        call = rpc("tools/call", {"name": "test_reconnection", "arguments": {}}, 8)
        with client.stream("POST", url, content=call, headers=headers) as response:
            priming = next(sse_events(response))  # then the connection goes away, mid-call
        assert priming["id"]
        result = resume(client, url, headers, priming["id"], 8)
        assert "Reconnection test completed." in result["result"]["content"][0]["text"]
