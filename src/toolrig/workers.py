"""Worker threads for sync tools: a cheaper hop than ``anyio.to_thread.run_sync`` for the executor's one use.

Why not ``to_thread``: per call it takes a capacity limiter, opens a shielded cancel scope, builds an asyncio
future and wakes a worker through its queue: about 3x the CPU of handing the function to an idle thread and
setting one ``anyio.Event`` back on the loop (measured in docs/performance.md). Semantics kept: the function
runs in a copy of the caller's context; a cancelled or timed-out caller stops waiting at once and the thread
finishes on its own (``abandon_on_cancel=True``); each busy worker holds one thread, so a hung tool never blocks
another. Idle threads end after ``IDLE_SECONDS``; past ``MAX_WORKERS`` busy ones, calls fall back to
``to_thread``.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

T = TypeVar("T")

IDLE_SECONDS = 10.0
MAX_WORKERS = 40

_Job = tuple[contextvars.Context, Callable[[], Any], list[Any], anyio.Event, anyio.lowlevel.EventLoopToken]


class _Worker:
    """One daemon thread that runs jobs handed to it, one at a time, while it is not idle for too long."""

    def __init__(self, pool: _Pool) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.pool = pool
        threading.Thread(target=self._loop, name="toolrig-worker", daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                context, fn, box, done, token = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self.pool.retire(self):
                    return
                continue
            try:
                box.append((True, context.run(fn)))
            except BaseException as exc:  # handed back to the caller, who re-raises it
                box.append((False, exc))
            del fn, context
            # AsyncBackend.run_sync_soon is anyio's own hop back onto the caller's loop (from_thread uses it);
            # if the loop is gone, the caller abandoned the call and nobody waits.
            with contextlib.suppress(Exception):
                token.backend_class.run_sync_soon(done.set, (), token.native_token)
            del done, box, token
            self.pool.release(self)


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.count = 0

    def take(self) -> _Worker | None:
        with self.lock:
            if self.idle:
                return self.idle.pop()
            if self.count >= MAX_WORKERS:
                return None
            self.count += 1
        return _Worker(self)

    def release(self, worker: _Worker) -> None:
        with self.lock:
            self.idle.append(worker)

    def retire(self, worker: _Worker) -> bool:
        """True if the idle worker may end (it is taken out of the pool first, so nobody hands it a job)."""
        with self.lock:
            if worker in self.idle and worker.jobs.empty():
                self.idle.remove(worker)
                self.count -= 1
                return True
            return False


_pool = _Pool()


async def run_sync(fn: Callable[[], T]) -> T:
    """Run ``fn`` in a worker thread, in a copy of the current context; cancellation abandons it."""
    worker = _pool.take()
    if worker is None:
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    done = anyio.Event()
    box: list[tuple[bool, Any]] = []
    worker.jobs.put((contextvars.copy_context(), fn, box, done, anyio.lowlevel.current_token()))
    await done.wait()
    ok, value = box[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value
