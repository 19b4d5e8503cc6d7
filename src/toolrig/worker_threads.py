"""Worker threads for sync tools: a persistent pool with a hand-back that skips the event loop when it can.

``anyio.to_thread.run_sync`` costs ~200 µs a call on a busy 2-core VM: a loop turn (its checkpoint), the
limiter, a queue hand-off that wakes the worker while the loop still holds the GIL, and a hand-back through
``call_soon_threadsafe`` (a self-pipe write, an epoll wake-up and another loop turn). Here the loop thread
hands the call to an idle worker and then sleeps on a pipe of its own for at most ``WAIT_ON_LOOP`` seconds: a
quick tool's result arrives with no loop machinery at all, and each thread wakes once per hand-over (a pipe
is written and read with the GIL given up, a lock is released while holding it: ``_Bell``). A call that
takes longer parks: the caller awaits an event the worker sets through the loop, so a slow or hung tool
blocks the loop for ``WAIT_ON_LOOP`` at most, and the caller's cancellation and deadline work as before.

What anyio's workers promise is kept: the same default thread limiter bounds how many sync calls run at
once; the call runs in a copy of the caller's context (context variables, the call's cancel token) with the
async-library marker cleared (a tool may start its own ``anyio.run``); ``anyio.from_thread`` finds the
caller's loop, and its ``check_cancelled()`` sees the call's deadline and the caller's cancellation (the
call's cancel scope, as anyio hands its workers theirs); a cancelled caller abandons the thread, which
finishes on its own. Idle workers exit after ``IDLE_SECONDS``; a forked child starts with an empty pool.
"""

from __future__ import annotations

import contextvars
import os
import select
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, suppress
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import sniffio
from anyio import CapacityLimiter
from anyio.lowlevel import EventLoopToken

_claim_worker_thread: Callable[[Any, object], AbstractContextManager[Any]] | None
_anyio_threadlocals: Any
try:  # anyio's own marker of a worker thread, so `anyio.from_thread.run(...)` finds the loop without a token,
    # and the thread's record of its call's cancel scope, which `anyio.from_thread.check_cancelled()` reads
    from anyio._core._eventloop import claim_worker_thread as _claim_worker_thread
    from anyio._core._eventloop import threadlocals as _anyio_threadlocals
except ImportError:  # pragma: no cover - a future anyio without them: from_thread then needs an explicit token
    _claim_worker_thread = _anyio_threadlocals = None

# The marker anyio (through sniffio) reads to tell which async library runs in this context.
_ASYNC_LIBRARY: contextvars.ContextVar[str | None] = sniffio.current_async_library_cvar

T = TypeVar("T")

_here = threading.local()  # per thread: the running loop's token and limiter, and the thread's reply bell

# How long the loop thread sleeps waiting for a call before it parks it (a trivial call returns in ~10-50 µs).
# ``poll`` counts in whole milliseconds (``select`` would take less, but refuses descriptors past 1023).
WAIT_ON_LOOP = 0.001
IDLE_SECONDS = 10.0  # as anyio's workers


class _Bell:
    """A pipe one thread sleeps on and another rings with a byte.

    Why a pipe and not a lock: ``os.write`` gives up the GIL before the ``write`` that wakes the sleeper, and
    ``os.read``/``poll`` give it up before they sleep, so the woken thread finds the GIL free and wakes once.
    A ``threading.Lock`` (or ``SimpleQueue``) is released while the releasing thread still holds the GIL: the
    woken thread then sleeps again on the GIL until the other blocks (measured: 4.5-6.3 context switches per
    hop and 45-88 µs, against 2.0 and 10-19 µs with pipes, on this 2-vCPU VM).
    """

    __slots__ = ("poller", "read", "write")

    def __init__(self) -> None:
        self.read, self.write = os.pipe()  # close-on-exec: no command a tool starts inherits them
        self.poller = select.poll()
        self.poller.register(self.read, select.POLLIN)

    def ring(self) -> None:
        os.write(self.write, b"\0")

    def wait(self, milliseconds: int) -> bool:
        """Sleep until rung (the ring is taken) or ``milliseconds`` passed (False)."""
        if not self.poller.poll(milliseconds):
            return False
        os.read(self.read, 1)
        return True

    def close(self) -> None:
        """Close both ends, once (a descriptor number closed twice could be another file's by then)."""
        read, write, self.read, self.write = self.read, self.write, -1, -1
        for fd in (read, write):
            if fd >= 0:
                with suppress(OSError):
                    os.close(fd)

    def __del__(self) -> None:  # a caller thread's bell goes with the thread
        self.close()


class _Job(Generic[T]):
    """One call handed to a worker: what to run, where, and how its result gets back."""

    __slots__ = ("context", "error", "finished", "fn", "loop", "reply", "scope", "state", "value", "wake")

    def __init__(self, fn: Callable[[], T], loop: EventLoopToken, reply: _Bell | None) -> None:
        self.fn = fn
        self.context = contextvars.copy_context()
        self.context.run(_ASYNC_LIBRARY.set, None)
        self.loop = loop
        # The caller's own bell while it sleeps on it (one per caller thread, so a ring never reaches another
        # caller); None for a caller that only ever parks.
        self.reply = reply
        # What anyio's `from_thread.check_cancelled()` asks in the worker (anyio hands its own workers a scope
        # too): cancelled when the caller abandons the call. Made, not entered: entering one costs ~10 µs here.
        self.scope = loop.backend_class.create_cancel_scope()
        self.state = threading.Lock()  # orders "finished" against "the caller parked"
        self.finished = False
        self.wake: anyio.Event | None = None
        self.value: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """In the worker thread: run the call in the caller's copied context, under the caller's scope."""
        if _anyio_threadlocals is not None:
            _anyio_threadlocals.current_cancel_scope = self.scope
        try:
            self.value = self.context.run(self.fn)
        except BaseException as exc:  # handed to the caller, which raises it
            self.error = exc
        finally:
            if _anyio_threadlocals is not None:
                _anyio_threadlocals.current_cancel_scope = None

    def abandon(self) -> None:
        """On the loop: the caller gave up (deadline or cancellation); the call hears it at its next check."""
        self.scope.cancel()

    def finish(self) -> None:
        """In the worker thread: wake the caller, sleeping on its bell or parked on the loop.

        The bell rings inside ``state``: a caller that stopped sleeping and finds ``finished`` set under the same
        lock knows the ring is in its pipe already (and takes it), so no ring is ever left for its next call.
        """
        with self.state:
            self.finished = True
            wake = self.wake
            if wake is None and self.reply is not None:
                with suppress(OSError):  # cannot happen while the caller sleeps on it; it stops sleeping in 1 ms
                    self.reply.ring()
        if wake is not None:
            # The caller's loop has ended (anyio's RunFinishedError, a RuntimeError): nobody waits for this result.
            with suppress(RuntimeError):
                self.loop.backend_class.run_sync_soon(wake.set, (), self.loop.native_token)

    def stop_sleeping(self) -> bool:
        """On the loop, after the bell did not ring in time: True when the call finished meanwhile (ring taken)."""
        with self.state:
            if self.finished:
                reply = self.reply
                if reply is not None and reply.poller.poll(0):
                    os.read(reply.read, 1)
                return True
            self.wake = anyio.Event()
            return False

    async def parked(self) -> T:
        """On the loop: wait without blocking it (cancellable; a cancelled caller abandons the thread)."""
        with self.state:
            if not self.finished and self.wake is None:
                self.wake = anyio.Event()
            wake = None if self.finished else self.wake
        if wake is not None:
            await wake.wait()
        return self.outcome()

    def outcome(self) -> T:
        error, self.error = self.error, None  # raised once; the job keeps no traceback alive
        if error is not None:
            raise error
        return self.value  # type: ignore[return-value]


class _Worker:
    """One pooled thread: its bell, and the job handed over with the ring."""

    __slots__ = ("bell", "job")

    def __init__(self) -> None:
        self.bell = _Bell()
        self.job: _Job[Any] | None = None


_pool_lock = threading.Lock()
_idle: list[_Worker] = []  # idle workers; the most recently idle is reused first
_IDLE_MS = int(IDLE_SECONDS * 1000)


def _serve(worker: _Worker) -> None:
    with ExitStack() as claimed:
        claimed_for: object = None
        while True:
            if not worker.bell.wait(_IDLE_MS):
                with _pool_lock:
                    if worker in _idle:
                        _idle.remove(worker)
                        worker.bell.close()
                        return
                continue  # a caller took this worker just now: its ring is on the way
            job, worker.job = worker.job, None
            if job is None:  # pragma: no cover - a ring always comes with its job
                continue
            if job.loop.native_token is not claimed_for and _claim_worker_thread is not None:
                # Marked as the caller's loop's worker, as anyio marks its own (claimed once per loop: ~8 µs).
                claimed.close()
                claimed.enter_context(_claim_worker_thread(job.loop.backend_class, job.loop.native_token))
                claimed_for = job.loop.native_token
            job.run()
            with _pool_lock:  # idle again before the caller wakes, so its next call finds this thread
                _idle.append(worker)
            job.finish()
            del job  # an idle worker keeps nothing of the call alive


def _dispatch(job: _Job[Any]) -> None:
    with _pool_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        threading.Thread(target=_serve, args=(worker,), name="toolrig sync tool", daemon=True).start()
    worker.job = job
    worker.bell.ring()


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: handing a call to one would wait forever.

    The pipes it inherited are the parent's too (a ring in one process could wake the other): closed here.
    """
    global _pool_lock
    _pool_lock = threading.Lock()
    for worker in _idle:
        worker.bell.close()
    _idle.clear()
    bell: _Bell | None = getattr(_here, "bell", None)
    if bell is not None:
        bell.close()
        del _here.bell


os.register_at_fork(after_in_child=_forget_pool_in_child)


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


def _reply_bell() -> _Bell:
    """This thread's bell for sleeping on its calls (one call at a time: the thread sleeps while it waits)."""
    bell: _Bell | None = getattr(_here, "bell", None)
    if bell is None:
        bell = _here.bell = _Bell()
    return bell


async def run_sync(fn: Callable[[], T], within: float) -> tuple[T | None, bool]:
    """Run ``fn`` in a worker thread: (its value, False), or (None, True) when ``within`` seconds passed first.

    The default thread limiter's token is held while the call runs, as ``anyio.to_thread.run_sync`` holds it
    (waiting for one counts against the timeout). A timed-out or cancelled call leaves its thread running to
    its end; the tool's cancel token, or ``anyio.from_thread.check_cancelled()``, is how it learns to stop.
    """
    loop, limiter = _this_loop()
    await loop.backend_class.checkpoint_if_cancelled()  # a cancelled caller starts nothing, as with anyio
    job: _Job[T] = _Job(fn, loop, None)
    try:
        limiter.acquire_on_behalf_of_nowait(job)
    except anyio.WouldBlock:
        try:
            with anyio.move_on_after(within):  # it will park: nobody sleeps on a bell for it
                await limiter.acquire_on_behalf_of(job)
                try:
                    _dispatch(job)
                    return await job.parked(), False
                finally:
                    limiter.release_on_behalf_of(job)
        except BaseException:
            job.abandon()
            raise
        job.abandon()
        return None, True
    try:
        bell = job.reply = _reply_bell()
        _dispatch(job)
        milliseconds = max(1, round(min(WAIT_ON_LOOP, within) * 1000))
        try:
            rung = bell.wait(milliseconds)
        except BaseException:
            # Interrupted while asleep (a signal handler's exception): no ring may be left for this thread's next
            # call, so the call either finished (its ring is taken) or is marked parked (it will not ring).
            job.stop_sleeping()
            raise
        if rung or job.stop_sleeping():
            return job.outcome(), False
        try:
            with anyio.move_on_after(within - milliseconds / 1000):
                return await job.parked(), False
        except BaseException:  # the caller's cancellation: the call is abandoned
            job.abandon()
            raise
        job.abandon()  # its deadline passed
        return None, True
    finally:
        limiter.release_on_behalf_of(job)
