"""A run's event list as its followers read it: from any point, in order, with keep-alives while it is quiet."""

from __future__ import annotations

import pytest

from toolrig.gateway.runs import LiveRun

pytestmark = pytest.mark.anyio


async def test_a_quiet_run_sends_keep_alives_then_its_events_then_ends() -> None:
    run = LiveRun("r1", "prompt", None, None)
    follower = run.follow(heartbeat=0)  # no wait at all: every quiet moment is a keep-alive
    assert await anext(follower) is None
    run.publish({"type": "init", "session_id": "s1"})
    assert await anext(follower) == (1, {"type": "init", "session_id": "s1"})
    run.finish("completed")
    assert await anext(follower) == (2, {"type": "run_end", "status": "completed"})
    with pytest.raises(StopAsyncIteration):
        await anext(follower)


async def test_a_late_follower_starts_after_the_id_it_saw_last() -> None:
    run = LiveRun("r1", "prompt", None, None)
    for index in range(3):
        run.publish({"type": "stream_text", "text": str(index)})
    run.finish("completed")
    seen = [item async for item in run.follow(2)]
    assert [item[0] for item in seen if item is not None] == [3, 4]
