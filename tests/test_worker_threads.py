from __future__ import annotations

import contextvars
import os
import signal
import threading
from collections.abc import Callable

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest

from toolrig import worker_threads
from toolrig.worker_threads import run_sync

pytestmark = pytest.mark.anyio

colour: contextvars.ContextVar[str] = contextvars.ContextVar("colour", default="none")


async def test_a_call_runs_in_another_thread_and_returns_its_value() -> None:
    value, timed_out = await run_sync(threading.get_ident, 10)
    assert not timed_out and value != threading.get_ident()


async def test_the_call_sees_the_callers_context_variables_and_changes_none_of_them() -> None:
    colour.set("red")

    def read_and_change() -> str:
        seen = colour.get()
        colour.set("blue")
        return seen

    assert await run_sync(read_and_change, 10) == ("red", False)
    assert colour.get() == "red"


async def test_an_exception_in_the_call_is_raised_in_the_caller() -> None:
    def fail() -> None:
        raise ValueError("broken on purpose")

    with pytest.raises(ValueError, match="broken on purpose"):
        await run_sync(fail, 10)


async def test_anyio_from_thread_finds_the_callers_loop_without_a_token() -> None:
    loop_thread = threading.get_ident()
    # anyio's own worker threads promise this; a sync tool written against it keeps working.
    value, _ = await run_sync(lambda: anyio.from_thread.run_sync(threading.get_ident), 10)
    assert value == loop_thread


async def test_the_call_may_run_its_own_event_loop() -> None:
    async def inner() -> str:
        await anyio.sleep(0)
        return "ran"

    # The async-library marker is cleared in the worker, so anyio.run does not think a loop is running there.
    assert await run_sync(lambda: anyio.run(inner), 10) == ("ran", False)


async def test_a_call_that_outlasts_the_short_wait_is_parked_and_still_returns() -> None:
    go = threading.Event()

    def wait_for_go() -> str:
        go.wait(10)
        return "done"

    results: list[tuple[str | None, bool]] = []

    async def call() -> None:
        results.append(await run_sync(wait_for_go, 10))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        # This task runs only once the call above gave the loop back, which it does when it parks.
        group.start_soon(lambda: anyio.to_thread.run_sync(go.set))
    assert results == [("done", False)]


async def test_a_timed_out_call_reports_the_timeout_and_its_thread_finishes_on_its_own() -> None:
    go, finished = threading.Event(), threading.Event()

    def slow() -> str:
        go.wait(10)
        finished.set()
        return "late"

    assert await run_sync(slow, 0.01) == (None, True)
    go.set()
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(finished.wait)


async def test_a_cancelled_caller_abandons_the_thread_and_gives_its_thread_token_back() -> None:
    go, finished = threading.Event(), threading.Event()
    limiter = anyio.to_thread.current_default_thread_limiter()

    def slow() -> None:
        go.wait(10)
        finished.set()

    with anyio.CancelScope() as scope:

        async def cancel_when_parked() -> None:
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(run_sync, slow, 10)
            group.start_soon(cancel_when_parked)
    assert scope.cancelled_caught
    assert limiter.borrowed_tokens == 0
    go.set()
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(finished.wait)


async def test_a_caller_cancelled_before_the_call_starts_nothing() -> None:
    started: list[bool] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        await run_sync(lambda: started.append(True), 10)
    assert scope.cancelled_caught and started == []


async def test_the_default_thread_limiter_bounds_how_many_calls_run_at_once() -> None:
    limiter = anyio.to_thread.current_default_thread_limiter()
    saved = limiter.total_tokens
    limiter.total_tokens = 2
    go, two_in = threading.Event(), threading.Event()
    lock = threading.Lock()
    running = [0, 0]  # now, most at once

    def hold() -> None:
        with lock:
            running[0] += 1
            running[1] = max(running)
            if running[0] == 2:
                two_in.set()
        go.wait(10)
        with lock:
            running[0] -= 1

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(run_sync, hold, 10)
                # Two run (both inside hold), two wait for a token; the wait for the two has a limiter of its own.
                await anyio.to_thread.run_sync(two_in.wait, limiter=anyio.CapacityLimiter(1))
                while limiter.statistics().tasks_waiting < 2:
                    await anyio.sleep(0)
                assert limiter.borrowed_tokens == 2 and running[0] == 2
                go.set()
    finally:
        limiter.total_tokens = saved
    assert running == [0, 2]


async def test_sequential_calls_reuse_one_worker_and_concurrent_calls_get_their_own() -> None:
    def workers() -> int:
        return sum(thread.name == "toolrig sync tool" for thread in threading.enumerate())

    before = workers()
    for _ in range(10):
        await run_sync(threading.get_ident, 10)
    assert workers() <= before + 1  # idle workers only ever leave; ten calls in a row need one at most
    both_in = threading.Barrier(2, timeout=10)

    def meet() -> int:
        both_in.wait()  # only two threads at once can pass
        return threading.get_ident()

    idents: list[int | None] = []

    async def call() -> None:
        idents.append((await run_sync(meet, 10))[0])

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        group.start_soon(call)
    assert len(set(idents)) == 2


def test_a_forked_child_starts_with_an_empty_pool_and_its_calls_still_run() -> None:
    anyio.run(run_sync, threading.get_ident, 10)  # the parent's pool has an idle worker now
    assert worker_threads._idle
    pid = os.fork()
    if pid == 0:  # the child: its pool must not hand the call to a thread that was not forked with it
        ok = False
        signal.alarm(10)
        try:
            ok = anyio.run(run_sync, lambda: "child", 10) == ("child", False)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_call_that_outlives_its_callers_loop_leaves_its_worker_serving() -> None:
    go = threading.Event()

    def slow() -> str:
        go.wait(10)
        return "late"

    assert anyio.run(run_sync, slow, 0.01) == (None, True)
    go.set()  # the worker finishes now and wakes a parked caller whose loop has ended: nothing to wake
    # The worker is idle again (most recently, so first in line) and takes the next call from a new loop.
    assert anyio.run(run_sync, lambda: "next", 10) == ("next", False)


_own_bell = worker_threads._reply_bell


class _CallersBell:
    """This thread's real bell (the worker rings it, the caller reads it), with a scripted ``wait``."""

    def __init__(self, wait: Callable[[], bool]) -> None:
        self.bell = _own_bell()
        self.read, self.poller, self.ring = self.bell.read, self.bell.poller, self.bell.ring
        self.wait = lambda milliseconds: wait()


def _finishes_reported(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    finished = threading.Event()
    original_finish = worker_threads._Job.finish

    def finish_and_say_so(job: worker_threads._Job[object]) -> None:
        original_finish(job)
        finished.set()

    monkeypatch.setattr(worker_threads._Job, "finish", finish_and_say_so)
    return finished


async def _next_call_gets_its_own_value() -> None:
    # Had a ring been left in this thread's pipe, this call would return at once, without its value.
    go = threading.Event()

    def second() -> str:
        go.wait(10)
        return "second"

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: anyio.to_thread.run_sync(go.set))
        assert await run_sync(second, 10) == ("second", False)


async def test_a_ring_that_came_after_the_short_wait_is_taken_and_never_answers_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    finished = _finishes_reported(monkeypatch)

    def wait_past_the_ring() -> bool:
        finished.wait(10)  # the worker has finished and rung: the caller "gave up" just before the ring
        return False

    monkeypatch.setattr(worker_threads, "_reply_bell", lambda: _CallersBell(wait_past_the_ring))
    assert await run_sync(lambda: "first", 10) == ("first", False)
    monkeypatch.undo()
    await _next_call_gets_its_own_value()


class _Interrupted(BaseException):
    """Stands for what a signal handler raises into the loop thread while it sleeps (KeyboardInterrupt)."""


async def test_a_caller_interrupted_while_asleep_leaves_no_ring_for_its_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    go = threading.Event()
    finished = _finishes_reported(monkeypatch)

    def slow() -> str:
        go.wait(10)
        return "late"

    def interrupted() -> bool:
        raise _Interrupted

    monkeypatch.setattr(worker_threads, "_reply_bell", lambda: _CallersBell(interrupted))
    with pytest.raises(_Interrupted):
        await run_sync(slow, 10)
    go.set()
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(finished.wait)  # the abandoned call has finished (and must not have rung)
    monkeypatch.undo()
    await _next_call_gets_its_own_value()


def test_an_idle_worker_that_leaves_closes_its_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_threads, "_IDLE_MS", 1)
    worker = worker_threads._Worker()
    with worker_threads._pool_lock:
        worker_threads._idle.append(worker)
    thread = threading.Thread(target=worker_threads._serve, args=(worker,))
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and worker not in worker_threads._idle
    assert (worker.bell.read, worker.bell.write) == (-1, -1)  # closed, once


def test_calls_from_two_event_loops_in_two_threads_each_get_their_own_results() -> None:
    # Each caller thread sleeps on its own pipe; the workers are shared. A ring that reached the wrong
    # thread would hand one loop the other's value (or none).
    start = threading.Barrier(2, timeout=10)
    wrong: list[tuple[int, object]] = []

    async def calls(me: int) -> None:
        for index in range(300):
            value, timed_out = await run_sync(lambda index=index: (me, index), 10)
            if timed_out or value != (me, index):
                wrong.append((me, value))

    def loop(me: int) -> None:
        start.wait()
        anyio.run(calls, me)

    threads = [threading.Thread(target=loop, args=(me,)) for me in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads) and wrong == []


class Polite:
    """A call that works in steps and asks anyio, between them, whether it should stop (anyio's own API)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()

    def __call__(self) -> str:
        self.started.set()
        try:
            while True:
                anyio.from_thread.check_cancelled()
                self.stopped.wait(0.005)
        finally:
            self.stopped.set()


async def test_anyio_check_cancelled_in_the_call_is_a_no_op_while_nothing_cancels_it() -> None:
    # It raised AttributeError (no current_cancel_scope on the thread): every such tool failed as internal.
    def one_step() -> int:
        anyio.from_thread.check_cancelled()
        return 7

    assert await run_sync(one_step, 10) == (7, False)


@pytest.mark.parametrize("parks", [False, True], ids=["past-the-wait-on-the-loop", "limiter-full"])
async def test_a_call_past_its_deadline_is_told_so_by_anyio_check_cancelled_and_stops(parks: bool) -> None:
    call = Polite()
    limiter = anyio.to_thread.current_default_thread_limiter()
    saved, holder = limiter.total_tokens, object()
    if parks:  # the only token is taken: the call waits for it, then parks at once, under its deadline
        limiter.total_tokens = 1
        limiter.acquire_on_behalf_of_nowait(holder)
        token = anyio.lowlevel.current_token()
        token.backend_class.run_sync_soon(limiter.release_on_behalf_of, (holder,), token.native_token)
    try:
        assert await run_sync(call, 0.2) == (None, True)
    finally:
        limiter.total_tokens = saved
    assert call.stopped.wait(30)  # a bound for a broken build: it stops at its next step


async def test_a_cancelled_caller_is_seen_by_anyio_check_cancelled_in_the_call() -> None:
    call = Polite()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(run_sync, call, 3600)
            while not call.started.is_set():
                await anyio.sleep(0.001)
            scope.cancel()
    assert call.stopped.wait(30)
