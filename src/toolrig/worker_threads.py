"""Worker threads for sync tools: a persistent pool with a hand-back that skips the event loop when it can.

``anyio.to_thread.run_sync`` costs ~200 µs a call on a busy 2-core VM: a loop turn (its checkpoint), the
limiter, a queue hand-off that wakes the worker while the loop still holds the GIL, and a hand-back through
``call_soon_threadsafe`` (a self-pipe write, an epoll wake-up and another loop turn). Here the loop thread
hands the call to an idle worker and then sleeps on a lock for at most ``WAIT_ON_LOOP`` seconds: a quick
tool's result arrives while the GIL is free for the worker and no loop machinery runs at all. A call that
takes longer parks: the caller awaits an event the worker sets through the loop, so a slow or hung tool
blocks the loop for ``WAIT_ON_LOOP`` at most, and the caller's cancellation and deadline work as before.

What anyio's workers promise is kept: the same default thread limiter bounds how many sync calls run at
once; the call runs in a copy of the caller's context (context variables, the call's cancel token) with the
async-library marker cleared (a tool may start its own ``anyio.run``); ``anyio.from_thread`` finds the
caller's loop; a cancelled caller abandons the thread, which finishes on its own. Idle workers exit after
``IDLE_SECONDS``; a forked child starts with an empty pool.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, suppress
from queue import Empty, SimpleQueue
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import sniffio
from anyio import CapacityLimiter
from anyio.lowlevel import EventLoopToken

_claim_worker_thread: Callable[[Any, object], AbstractContextManager[Any]] | None
try:  # anyio's own marker of a worker thread, so `anyio.from_thread.run(...)` finds the loop without a token
    from anyio._core._eventloop import claim_worker_thread as _claim_worker_thread
except ImportError:  # pragma: no cover - a future anyio without it: from_thread then needs an explicit token
    _claim_worker_thread = None

# The marker anyio (through sniffio) reads to tell which async library runs in this context.
_ASYNC_LIBRARY: contextvars.ContextVar[str | None] = sniffio.current_async_library_cvar

T = TypeVar("T")

# How long the loop thread sleeps waiting for a call before it parks it (a trivial call returns in ~20-50 µs).
WAIT_ON_LOOP = 0.0005
IDLE_SECONDS = 10.0  # as anyio's workers


class _Job(Generic[T]):
    """One call handed to a worker: what to run, where, and how its result gets back."""

    __slots__ = ("context", "done", "error", "finished", "fn", "loop", "state", "value", "wake")

    def __init__(self, fn: Callable[[], T], loop: EventLoopToken) -> None:
        self.fn = fn
        self.context = contextvars.copy_context()
        self.context.run(_ASYNC_LIBRARY.set, None)
        self.loop = loop
        self.done = threading.Lock()
        self.done.acquire()  # released by the worker when the call has finished
        self.state = threading.Lock()  # orders "finished" against "the caller parked"
        self.finished = False
        self.wake: anyio.Event | None = None
        self.value: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """In the worker thread: run the call in the caller's copied context."""
        try:
            self.value = self.context.run(self.fn)
        except BaseException as exc:  # handed to the caller, which raises it
            self.error = exc

    def finish(self) -> None:
        """In the worker thread: wake the caller, sleeping on the lock or parked on the loop."""
        with self.state:
            self.finished = True
            wake = self.wake
        self.done.release()
        if wake is not None:
            # The caller's loop has ended (anyio's RunFinishedError, a RuntimeError): nobody waits for this result.
            with suppress(RuntimeError):
                self.loop.backend_class.run_sync_soon(wake.set, (), self.loop.native_token)

    async def parked(self) -> T:
        """On the loop: wait without blocking it (cancellable; a cancelled caller abandons the thread)."""
        wake = anyio.Event()
        with self.state:
            if not self.finished:
                self.wake = wake
        if self.wake is not None:
            await wake.wait()
        return self.outcome()

    def outcome(self) -> T:
        error, self.error = self.error, None  # raised once; the job keeps no traceback alive
        if error is not None:
            raise error
        return self.value  # type: ignore[return-value]


_pool_lock = threading.Lock()
_idle: list[SimpleQueue[_Job[Any]]] = []  # inboxes of idle workers; the most recently idle is reused first


def _serve(inbox: SimpleQueue[_Job[Any]]) -> None:
    with ExitStack() as claimed:
        claimed_for: object = None
        while True:
            try:
                job = inbox.get(timeout=IDLE_SECONDS)
            except Empty:
                with _pool_lock:
                    if inbox in _idle:
                        _idle.remove(inbox)
                        return
                continue  # a caller took this worker just now: its job is on the way
            if job.loop.native_token is not claimed_for and _claim_worker_thread is not None:
                # Marked as the caller's loop's worker, as anyio marks its own (claimed once per loop: ~8 µs).
                claimed.close()
                claimed.enter_context(_claim_worker_thread(job.loop.backend_class, job.loop.native_token))
                claimed_for = job.loop.native_token
            _serve_one(inbox, job)
            del job  # an idle worker keeps nothing of the call alive


def _serve_one(inbox: SimpleQueue[_Job[Any]], job: _Job[Any]) -> None:
    job.run()
    with _pool_lock:  # idle again before the caller wakes, so its next call finds this thread
        _idle.append(inbox)
    job.finish()


def _dispatch(job: _Job[Any]) -> None:
    with _pool_lock:
        inbox = _idle.pop() if _idle else None
    if inbox is None:
        inbox = SimpleQueue()
        threading.Thread(target=_serve, args=(inbox,), name="toolrig sync tool", daemon=True).start()
    inbox.put(job)


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: handing a call to one would wait forever."""
    global _pool_lock
    _pool_lock = threading.Lock()
    _idle.clear()


os.register_at_fork(after_in_child=_forget_pool_in_child)


_here = threading.local()


def _this_loop() -> tuple[EventLoopToken, CapacityLimiter]:
    """The running loop's token and default thread limiter, remembered per thread (~6 µs to look up afresh).

    The remembered pair is used only while its loop is the one running on this thread (the backend's own
    ``current_token`` is a cheap check); a thread's next loop looks them up again.
    """
    known: tuple[EventLoopToken, CapacityLimiter] | None = getattr(_here, "loop", None)
    if known is not None:
        try:
            if known[0].backend_class.current_token() is known[0].native_token:
                return known
        except RuntimeError:
            pass
    known = anyio.lowlevel.current_token(), anyio.to_thread.current_default_thread_limiter()
    _here.loop = known
    return known


async def run_sync(fn: Callable[[], T], within: float) -> tuple[T | None, bool]:
    """Run ``fn`` in a worker thread: (its value, False), or (None, True) when ``within`` seconds passed first.

    The default thread limiter's token is held while the call runs, as ``anyio.to_thread.run_sync`` holds it
    (waiting for one counts against the timeout). A timed-out or cancelled call leaves its thread running to
    its end; the tool's cancel token is how it learns to stop.
    """
    await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing, as with anyio
    loop, limiter = _this_loop()
    job: _Job[T] = _Job(fn, loop)
    try:
        limiter.acquire_on_behalf_of_nowait(job)
    except anyio.WouldBlock:
        with anyio.move_on_after(within):
            await limiter.acquire_on_behalf_of(job)
            try:
                _dispatch(job)
                return await job.parked(), False
            finally:
                limiter.release_on_behalf_of(job)
        return None, True
    try:
        _dispatch(job)
        waited = min(WAIT_ON_LOOP, within)
        if job.done.acquire(timeout=waited):
            return job.outcome(), False
        with anyio.move_on_after(within - waited):
            return await job.parked(), False
        return None, True
    finally:
        limiter.release_on_behalf_of(job)
