from __future__ import annotations

import contextvars
import threading

import anyio
import pytest

from toolrig import workers

pytestmark = pytest.mark.anyio

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


async def test_the_function_runs_in_another_thread_and_returns_its_value() -> None:
    assert await workers.run_sync(threading.get_ident) != threading.get_ident()


async def test_the_function_sees_the_callers_context_variables() -> None:
    _VAR.set("from the caller")
    assert await workers.run_sync(_VAR.get) == "from the caller"


async def test_an_exception_is_raised_in_the_caller() -> None:
    def fail() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await workers.run_sync(fail)


async def test_a_cancelled_caller_stops_waiting_and_the_function_finishes_on_its_own() -> None:
    release, finished = threading.Event(), threading.Event()

    def hang() -> str:
        release.wait()
        finished.set()
        return "late"

    with anyio.move_on_after(0.05) as scope:
        await workers.run_sync(hang)
    assert scope.cancelled_caught and not finished.is_set()
    release.set()
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(finished.wait)


async def test_a_hung_function_does_not_hold_up_the_next_call() -> None:
    release = threading.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(workers.run_sync, release.wait)
        with anyio.fail_after(10):
            assert await workers.run_sync(lambda: 42) == 42
        release.set()


async def test_many_concurrent_calls_all_complete_even_past_the_pool_size() -> None:
    results: list[int] = []

    async def one(i: int) -> None:
        results.append(await workers.run_sync(lambda: i))

    async with anyio.create_task_group() as group:
        for i in range(workers.MAX_WORKERS + 10):
            group.start_soon(one, i)
    assert sorted(results) == list(range(workers.MAX_WORKERS + 10))
