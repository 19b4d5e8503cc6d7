"""Cooperative cancellation that reaches into worker threads.

anyio can abandon a sync tool's worker thread on timeout, but it cannot stop it. The token is how such a
thread learns that its result was already reported: every write path in the sandbox checks it just
before committing, so a timed-out tool never changes the workspace afterwards.
"""

from __future__ import annotations

import contextvars
import threading

from toolrig.errors import ErrorType, ToolError


class CancelToken:
    """A flag that worker threads can read; the event behind ``wait`` is made only if someone waits."""

    __slots__ = ("_cancelled", "_event", "_reason")

    def __init__(self) -> None:
        self._cancelled = False
        self._reason = ""
        self._event: threading.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def reason(self) -> str:
        return self._reason

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._cancelled:
            self._reason = reason
            self._cancelled = True
        event = self._event
        if event is not None:
            event.set()

    def raise_if_cancelled(self) -> None:
        """Stop here if the call was cancelled or timed out; call it before any side effect."""
        if self._cancelled:
            raise ToolError(
                ErrorType.CANCELLED,
                f"The call was stopped ({self._reason}) before this step.",
                "Nothing more was changed; retry only if it is still wanted.",
            )

    def wait(self, timeout: float | None = None) -> bool:
        """Block a worker thread until cancelled (or the timeout passes); True when cancelled."""
        if self._event is None:
            with _EVENT_LOCK:
                if self._event is None:
                    self._event = threading.Event()
        if self._cancelled:  # cancelled before the event existed
            self._event.set()
        return self._event.wait(timeout)


_EVENT_LOCK = threading.Lock()


_current: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("toolrig_cancel", default=None)


def current_token() -> CancelToken | None:
    """The token of the tool call running in this context (worker threads inherit it through anyio)."""
    return _current.get()


def check_cancelled() -> None:
    """Raise if the current call was cancelled; a no-op outside a tool call."""
    token = _current.get()
    if token is not None:
        token.raise_if_cancelled()


def bind_token(token: CancelToken) -> contextvars.Token[CancelToken | None]:
    return _current.set(token)


def unbind_token(reset: contextvars.Token[CancelToken | None]) -> None:
    _current.reset(reset)
