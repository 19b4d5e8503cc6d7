"""Channels start and stop with the server, share its runs (the page sees a channel's run), and fail alone."""

from __future__ import annotations

import threading
from typing import Any

import anyio

from tests.support.fake_llm import Text, reply
from toolrig.gateway.runs import RunManager


class EchoChannel:
    """A channel as a chat app would be: it starts a run, relays its events, and notes when it is stopped."""

    name = "echo"

    def __init__(self) -> None:
        self.relayed: list[dict[str, Any]] = []
        self.run_id = ""
        self.stopped = threading.Event()
        self.finished = threading.Event()

    async def serve(self, runs: RunManager) -> None:
        try:
            run = runs.start("hello from chat", session_id=None, agent=None)
            self.run_id = run.id
            async for item in run.follow(0):
                if item is not None:
                    self.relayed.append(item[1])
            assert run.session_id is not None and runs.for_session(run.session_id) is None  # finished
            self.finished.set()
            await anyio.sleep_forever()
        finally:
            self.stopped.set()


class BrokenChannel:
    name = "broken"

    async def serve(self, runs: RunManager) -> None:
        raise RuntimeError("the chat app is down")


def test_a_channel_runs_through_the_servers_runs_and_stops_with_it(serve: Any) -> None:
    echo = EchoChannel()
    gw = serve(channels=[BrokenChannel(), echo])
    gw.llm.script(reply(Text("hi back")))
    assert echo.finished.wait(30), "the channel's run did not finish"
    assert [e["type"] for e in echo.relayed][-1] == "run_end"
    assert "".join(e["text"] for e in echo.relayed if e["type"] == "stream_text") == "hi back"
    with gw.client() as client:  # the API (and so the page) sees the channel's run, and answers as usual
        seen = client.get(f"/api/runs/{echo.run_id}").json()
        assert seen["prompt"] == "hello from chat" and seen["status"] == "completed"
        assert client.get("/api/sessions").status_code == 200  # the broken channel took nothing down
    assert not echo.stopped.is_set()
    gw.stop()
    assert echo.stopped.is_set()
