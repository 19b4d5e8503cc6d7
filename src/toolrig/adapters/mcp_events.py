"""The streamable HTTP event store: what lets a client that lost its SSE stream resume it with ``Last-Event-ID``.

Every message the server sends on an SSE stream is stored under a fresh event id before it goes out; a
client whose connection dropped (or that the server told to poll, SEP-1699) reconnects with the last id
it saw and gets everything after it on that stream, its call's result included.

Trust model: one store serves every session of the server, so an event id is an unguessable token: a
client can only name events it was sent. The store is bounded (oldest events go first) so a client that
never comes back cannot grow it without limit.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

if TYPE_CHECKING:
    from mcp.types import JSONRPCMessage

DEFAULT_MAX_EVENTS = 4096


@dataclass(frozen=True, slots=True)
class _Stored:
    stream_id: StreamId
    seq: int
    message: JSONRPCMessage | None  # None: a priming event (a cursor with no data)


class MemoryEventStore(EventStore):
    """Events in memory, in order, at most ``max_events`` of them."""

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self.max_events = max_events
        self._events: OrderedDict[EventId, _Stored] = OrderedDict()
        self._streams: dict[StreamId, list[EventId]] = {}
        self._seq = 0
        self._lock = anyio.Lock()

    @property
    def size(self) -> int:
        """Events held now (not ``__len__``: the SDK tests the store for truth, and an empty one must pass)."""
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        async with self._lock:
            self._seq += 1
            event_id = secrets.token_urlsafe(12)
            self._events[event_id] = _Stored(stream_id, self._seq, message)
            self._streams.setdefault(stream_id, []).append(event_id)
            while len(self._events) > self.max_events:
                old_id, old = self._events.popitem(last=False)
                ids = self._streams.get(old.stream_id)
                if ids:
                    ids.remove(old_id)
                    if not ids:
                        del self._streams[old.stream_id]
            return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        async with self._lock:
            last = self._events.get(last_event_id)
            if last is None:
                return None
            later: list[tuple[EventId, JSONRPCMessage]] = []
            for event_id in self._streams.get(last.stream_id, []):
                stored = self._events[event_id]
                if stored.seq > last.seq and stored.message is not None:
                    later.append((event_id, stored.message))
        for event_id, message in later:
            await send_callback(EventMessage(message, event_id))
        return last.stream_id
