"""The real gateway on 127.0.0.1 (port 0) in a thread, over a Rig whose model is the scripted fake server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.agent.conftest import agent_config
from tests.support import sample_tools
from tests.support.fake_llm import FakeLLM
from toolrig.adapters.mcp_http import bind
from toolrig.gateway.server import make_server
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools.interact import AskUser, SuggestFollowups, WriteTodos

TOKEN = "test-token-" + "x" * 24


@dataclass
class Served:
    base: str
    token: str | None
    llm: FakeLLM
    rig: Rig
    server: Any = None
    thread: threading.Thread | None = None

    def stop(self) -> None:
        """Stop the server as a shutdown does (its runs are stopped; paused ones stay kept)."""
        self.server.should_exit = True
        assert self.thread is not None
        self.thread.join(30)
        assert not self.thread.is_alive(), "the gateway did not stop"

    def client(self, *, auth: bool = True, **options: Any) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if auth and self.token else {}
        return httpx2.Client(base_url=self.base, headers=headers, **{"timeout": 30, **options})

    def events(self, client: httpx2.Client, run_id: str, *, until: str = "run_end") -> Iterator[dict[str, Any]]:
        """The run's SSE events, parsed, up to and including the first of type ``until``."""
        with client.stream("GET", f"/api/runs/{run_id}/events") as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    yield event
                    if event.get("type") == until:
                        return


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


def gateway_rig(workspace: Path, llm: FakeLLM, **config: Any) -> Rig:
    from toolrig.tools.agents import TOOLS

    registry = Registry([*sample_tools.agent_tools(), AskUser(), WriteTodos(), SuggestFollowups()])
    return Rig(workspace, config={**agent_config(llm, "anthropic"), **config}, registry=registry, tools=TOOLS)


@pytest.fixture
def serve(workspace: Path, llm: FakeLLM) -> Iterator[Any]:
    """``serve(token=..., **config)`` starts a gateway; every one started is stopped at the end."""
    started: list[tuple[Any, threading.Thread]] = []
    llm.reset()

    def start(
        *, token: str | None = TOKEN, channels: Any = (), users: Any = None, shared: bool = False, **config: Any
    ) -> Served:
        rig = gateway_rig(workspace, llm, **config)
        sock = bind("127.0.0.1", 0)  # listening before the thread starts: clients may connect at once
        server, base = make_server(rig, sock, token=token, channels=channels, users=users, shared=shared)

        async def main() -> None:
            async with rig:
                await server.serve(sockets=[sock])

        thread = threading.Thread(target=anyio.run, args=(main,), name="gateway", daemon=True)
        thread.start()
        served = Served(base, token, llm, rig, server, thread)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()
