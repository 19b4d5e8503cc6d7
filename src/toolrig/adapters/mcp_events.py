"""The streamable HTTP event store: what lets a client that lost its SSE stream resume it with ``Last-Event-ID``.

Every message the server sends on an SSE stream is stored under a fresh event id before it goes out; a
client whose connection dropped (or that the server told to poll, SEP-1699) reconnects with the last id
it saw and gets everything after it on that stream, its call's result included.

Trust model: one store serves every session of the server, so an event id is an unguessable token: a
client can only name events it was sent. The store is bounded by BYTES, in all and per stream (a count
bound let 60 results of four 1 MB images each hold 300 MB, and 4096 of them 20 GB): the oldest events go
first, and a message larger than its stream's budget is delivered live but not kept.

A resume that can no longer be served gets a clear answer instead of silence: if the evicted events held
the call's result, the client is sent a JSON-RPC error for that request (``-32603``, saying the result was
dropped from the bounded replay buffer), so its call ends rather than waiting forever; whatever later events
of the stream are still held are replayed first.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

if TYPE_CHECKING:
    from mcp.types import JSONRPCMessage

DEFAULT_MAX_EVENTS = 4096
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # all streams together
DEFAULT_MAX_STREAM_BYTES = 16 * 1024 * 1024  # one stream (one call's progress and result)
MAX_FORGOTTEN = 16_384  # evicted event ids remembered (~100 bytes each), to answer a late resume clearly
INTERNAL_ERROR = -32603
DROPPED = (
    "The result of this request was dropped from the server's bounded replay buffer before the client "
    "resumed the stream, so it cannot be sent again. Call the tool again if it is still wanted "
    "(its effects, if any, have happened)."
)


@dataclass(frozen=True, slots=True)
class _Stored:
    stream_id: StreamId
    seq: int
    message: JSONRPCMessage | None  # None: a priming event (a cursor with no data)
    size: int


def _size(message: JSONRPCMessage | None) -> int:
    """The bytes the message costs on the wire (and, within a small factor, held in memory)."""
    if message is None:
        return 64
    return len(message.model_dump_json(by_alias=True, exclude_unset=True)) + 64


def _answer_id(message: Any) -> Any:
    """The request id a response or error answers; None for requests, notifications and priming events."""
    if message is None or not hasattr(message, "id"):
        return None
    if hasattr(message, "result") or hasattr(message, "error"):
        return message.id
    return None


class MemoryEventStore(EventStore):
    """Events in memory, in order, within ``max_bytes`` (and ``max_stream_bytes`` a stream, ``max_events``)."""

    def __init__(
        self,
        max_events: int = DEFAULT_MAX_EVENTS,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
    ) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.max_stream_bytes = min(max_stream_bytes, max_bytes)
        self._events: OrderedDict[EventId, _Stored] = OrderedDict()
        self._streams: dict[StreamId, list[EventId]] = {}
        self._stream_bytes: dict[StreamId, int] = {}
        self._bytes = 0
        self._forgotten: OrderedDict[EventId, tuple[StreamId, int]] = OrderedDict()  # evicted id -> stream, seq
        self._lost: OrderedDict[StreamId, tuple[Any, int]] = OrderedDict()  # stream -> evicted answer's (id, seq)
        self._seq = 0
        self._lock = anyio.Lock()

    @property
    def size(self) -> int:
        """Events held now (not ``__len__``: the SDK tests the store for truth, and an empty one must pass)."""
        return len(self._events)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        size = _size(message)
        async with self._lock:
            self._seq += 1
            event_id = secrets.token_urlsafe(12)
            self._events[event_id] = _Stored(stream_id, self._seq, message, size)
            self._streams.setdefault(stream_id, []).append(event_id)
            self._stream_bytes[stream_id] = self._stream_bytes.get(stream_id, 0) + size
            self._bytes += size
            while self._stream_bytes.get(stream_id, 0) > self.max_stream_bytes:
                self._evict(self._streams[stream_id][0])
            while len(self._events) > self.max_events or self._bytes > self.max_bytes:
                self._evict(next(iter(self._events)))
            return event_id

    def _evict(self, event_id: EventId) -> None:
        old = self._events.pop(event_id)
        self._bytes -= old.size
        ids = self._streams.get(old.stream_id)
        if ids:
            ids.remove(event_id)
            self._stream_bytes[old.stream_id] -= old.size
            if not ids:
                del self._streams[old.stream_id]
                del self._stream_bytes[old.stream_id]
        self._forgotten[event_id] = (old.stream_id, old.seq)
        answered = _answer_id(old.message)
        if answered is not None:
            self._lost[old.stream_id] = (answered, old.seq)
        for bounded in (self._forgotten, self._lost):
            while len(bounded) > MAX_FORGOTTEN:
                bounded.popitem(last=False)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        async with self._lock:
            last = self._events.get(last_event_id)
            if last is not None:
                stream_id, seq = last.stream_id, last.seq
            elif last_event_id in self._forgotten:
                stream_id, seq = self._forgotten[last_event_id]
            else:
                return None  # an id this store never gave (or forgot long ago): nothing to resume
            later: list[tuple[EventId, JSONRPCMessage]] = []
            for event_id in self._streams.get(stream_id, []):
                stored = self._events[event_id]
                if stored.seq > seq and stored.message is not None:
                    later.append((event_id, stored.message))
            answered = any(_answer_id(message) is not None for _, message in later)
            gone = self._lost.get(stream_id)
            lost = gone[0] if gone is not None and gone[1] > seq and not answered else None  # after the resume point
        for event_id, message in later:
            await send_callback(EventMessage(message, event_id))
        if lost is not None:
            await send_callback(EventMessage(_dropped(lost), None))
        return stream_id


def _dropped(request_id: Any) -> JSONRPCMessage:
    from mcp.types import ErrorData, JSONRPCError

    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=DROPPED))
