"""The bus events travel through: a sink protocol, a sink that drops them, and a fan-out to subscribers.

Apart from ``toolrig.events`` (the event kinds) so that holding a bus costs no event class: a command that
emits no event (``toolrig call`` of a quiet tool) never builds the 20 dataclasses there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from toolrig.events import Event


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class NullSink:
    """Drops events; the default when nobody is listening."""

    def emit(self, event: Event) -> None:
        return None


class EventBus:
    """Fans events out to subscribers; safe to emit from worker threads (sync tools report progress)."""

    def __init__(self) -> None:
        self._subscribers: list[Callable[[Event], None]] = []
        self._lock = threading.Lock()

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def emit(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback(event)
