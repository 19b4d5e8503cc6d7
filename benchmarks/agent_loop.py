"""Agent-loop overhead per model turn against the raw SDK stream, both reading the same local server.

The server (``tests/support/fake_llm.py``) runs in its own process and answers every request with the same
bytes. Peer: the official SDK's stream iterated to the end (Anthropic ``messages.create(stream=True)``,
OpenAI ``chat.completions.create(stream=True)``), one request per turn. Ours: ``run_agent`` on the same
provider, sessions on (SQLite writes included) and off. Scenario "text" is one turn of 50 text
fragments; "tools" is four turns (three calls to a trivial tool, then the answer), the peer making the
same four requests. Also: time from the first SSE byte to the first ``stream_text`` event, against the
SDK's first text delta. Targets: <= 5% more wall time and <= 2 ms per turn.

    python benchmarks/agent_loop.py [--rounds 150] [--runs 1]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import httpx2  # noqa: E402
from tests.support.sample_tools import add  # noqa: E402

from _harness import Series, alternate_async, fmt_seconds, print_table, result_line  # noqa: E402
from toolrig.agent import RunOptions, run_agent  # noqa: E402
from toolrig.agent.providers import ProviderSettings, make_provider  # noqa: E402
from toolrig.events import Event  # noqa: E402
from toolrig.registry import Registry  # noqa: E402
from toolrig.rig import Rig  # noqa: E402

TURNS = {"text": 1, "tools": 4}


class FirstByte(httpx2.AsyncBaseTransport):
    """Records when the first byte of each response body arrives."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.first: float | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        transport = self
        stream = response.stream

        class Timed(httpx2.AsyncByteStream):
            async def __aiter__(self) -> Any:
                async for chunk in stream:  # type: ignore[union-attr]
                    if transport.first is None:
                        transport.first = time.perf_counter()
                    yield chunk

            async def aclose(self) -> None:
                await stream.aclose()  # type: ignore[union-attr]

        response.stream = Timed()
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def start_server(scenario: str) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_llm", scenario],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert server.stdout is not None
    return server, int(server.stdout.readline())


def settings(kind: str, port: int) -> ProviderSettings:
    base = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")
    model = "claude-bench" if kind == "anthropic" else "gpt-bench"
    return ProviderSettings(kind, model, "bench-key", base_url=base, max_retries=0)  # type: ignore[arg-type]


async def measure(kind: str, scenario: str, rounds: int, runs: int) -> dict[str, Any]:
    server, port = start_server(scenario)
    try:
        return await _measure(kind, scenario, port, rounds, runs)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)


async def _measure(kind: str, scenario: str, port: int, rounds: int, runs: int) -> dict[str, Any]:
    turns = TURNS[scenario]
    peer_timing = FirstByte()
    ours_timing = FirstByte()
    provider = make_provider(settings(kind, port))
    bare = make_provider(settings(kind, port))  # the peer uses the same SDK client setup, its own instance
    _install_transport(provider, ours_timing)
    _install_transport(bare, peer_timing)
    workspace = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    rig = Rig(workspace, config={}, registry=Registry([add]))
    first_text: dict[str, list[float]] = {"ours": [], "peer": []}

    def make_ours(persist: bool) -> Any:
        async def ours() -> None:
            state = {"seen": False}

            def on_event(event: Event) -> None:
                if not state["seen"] and event.type == "stream_text":
                    state["seen"] = True
                    first_text["ours"].append(time.perf_counter() - (ours_timing.first or 0))
                elif event.type == "usage":
                    ours_timing.first = None
                    state["seen"] = False

            ours_timing.first = None
            options = RunOptions(provider=provider, persist=persist, system_prompt="You are a benchmark.")
            result = await run_agent("go", options, rig=rig, on_event=on_event)
            assert result.turns == turns, result

        return ours

    # The peer sends exactly the request bodies the loop sent, turn by turn (the history grows per turn).
    recorded: list[dict[str, Any]] = []
    original = provider.params  # type: ignore[attr-defined]

    def recording(request: Any) -> dict[str, Any]:
        made: dict[str, Any] = original(request)
        if len(recorded) < turns:
            recorded.append(made)
        return made

    provider.params = recording  # type: ignore[attr-defined]
    await make_ours(False)()
    provider.params = original  # type: ignore[attr-defined]

    async def peer() -> None:
        for params in recorded:
            peer_timing.first = None
            seen = False
            if kind == "anthropic":
                stream = await bare.client().messages.create(**params, stream=True)  # type: ignore[attr-defined]
                async with stream:
                    async for event in stream:
                        if not seen and event.type == "content_block_delta" and event.delta.type == "text_delta":
                            seen = True
                            first_text["peer"].append(time.perf_counter() - (peer_timing.first or 0))
            else:
                stream = await bare.client().chat.completions.create(**params)  # type: ignore[attr-defined]
                async with stream:
                    async for chunk in stream:
                        if not seen and chunk.choices and chunk.choices[0].delta.content:
                            seen = True
                            first_text["peer"].append(time.perf_counter() - (peer_timing.first or 0))

    contenders = {
        "raw SDK stream": peer,
        "run_agent, sessions off": make_ours(False),
        "run_agent, sessions on": make_ours(True),
    }
    for fn in contenders.values():  # warm up: imports, connections, SQLite file, schema caches
        for _ in range(3):
            await fn()
    first_text["ours"].clear()
    first_text["peer"].clear()
    series = await alternate_async(contenders, rounds=rounds, per_round=runs)
    await provider.aclose()
    await bare.aclose()
    return {"series": series, "first_text": first_text, "turns": turns}


def _install_transport(provider: Any, transport: FirstByte) -> None:
    s = provider.settings
    client = httpx2.AsyncClient(transport=transport, timeout=60)
    if s.provider == "anthropic":
        from anthropic import AsyncAnthropic

        provider._client = AsyncAnthropic(api_key=s.api_key, base_url=s.base_url, max_retries=0, http_client=client)
    else:
        from openai import AsyncOpenAI

        provider._client = AsyncOpenAI(api_key=s.api_key, base_url=s.base_url, max_retries=0, http_client=client)


class ReplayProvider:
    """Replays finished turns with no network, to isolate the loop's own cost per turn."""

    name = "anthropic"

    def __init__(self) -> None:
        from toolrig.agent.providers.base import ProviderSettings

        self.settings = ProviderSettings("anthropic", "claude-bench", "k")
        self.count = 0

    async def stream(self, request: Any) -> Any:
        from toolrig.agent.messages import Message, TextBlock, ToolCallBlock
        from toolrig.agent.providers.base import TurnComplete
        from toolrig.agent.usage import Usage
        from toolrig.events import StreamTextEvent

        self.count += 1
        if self.count % 2:
            call = ToolCallBlock(f"c{self.count}", "add", '{"a": 1, "b": 2}')
            yield TurnComplete(Message("assistant", [call]), Usage(100, 20, calls=1), "tool_calls")
        else:
            for i in range(50):
                yield StreamTextEvent(f"word{i} ")
            text = "".join(f"word{i} " for i in range(50))
            yield TurnComplete(Message("assistant", [TextBlock(text)]), Usage(100, 20, calls=1), "end")

    async def aclose(self) -> None:
        return None


async def loop_cost(persist: bool, runs: int = 400) -> float:
    """Seconds per turn of a two-turn run (a tool call, then 50 text fragments) with no network."""
    rig = Rig(Path(tempfile.mkdtemp(prefix="bench-loop-")), config={}, registry=Registry([add]))
    options = RunOptions(provider=ReplayProvider(), persist=persist, system_prompt="x")  # type: ignore[arg-type]
    for _ in range(20):
        await run_agent("go", options, rig=rig, on_event=lambda event: None)
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs // 5):
            await run_agent("go", options, rig=rig, on_event=lambda event: None)
        samples.append((time.perf_counter() - start) / (runs // 5) / 2)
    return statistics.median(samples)


async def main(rounds: int, runs: int) -> None:
    rows = []
    worst_ratio = 0.0
    worst_added = 0.0
    headline: tuple[float, float] | None = None
    for kind in ("anthropic", "openai"):
        for scenario in ("text", "tools"):
            found = await measure(kind, scenario, rounds, runs)
            series: dict[str, Series] = found["series"]
            turns = found["turns"]
            peer = series["raw SDK stream"].median
            for name in ("run_agent, sessions off", "run_agent, sessions on"):
                ours = series[name].median
                added = (ours - peer) / turns
                ratio = ours / peer
                if name.endswith("on"):
                    worst_ratio = max(worst_ratio, ratio)
                    worst_added = max(worst_added, added)
                    if kind == "anthropic" and scenario == "text":
                        headline = (ours, peer)
                rows.append(
                    (
                        kind,
                        scenario,
                        name,
                        fmt_seconds(ours / turns),
                        fmt_seconds(peer / turns),
                        fmt_seconds(added),
                        f"{ratio:.3f}",
                    )
                )
            ft = found["first_text"]
            rows.append(
                (
                    kind,
                    scenario,
                    "first SSE byte -> first text",
                    fmt_seconds(statistics.median(ft["ours"])),
                    fmt_seconds(statistics.median(ft["peer"])),
                    fmt_seconds(statistics.median(ft["ours"]) - statistics.median(ft["peer"])),
                    "",
                )
            )
    print_table(
        f"Agent loop vs raw SDK stream ({rounds} rounds x {runs} runs, medians)",
        rows,
        ("provider", "scenario", "path", "ours/turn", "peer/turn", "added/turn", "ratio"),
    )
    off, on = await loop_cost(False), await loop_cost(True)
    print(
        f"\nLoop cost with no network, per turn of a two-turn run: "
        f"sessions off {fmt_seconds(off)}, on {fmt_seconds(on)}"
    )
    assert headline is not None
    print(
        result_line(
            "agent_loop",
            headline[0],
            headline[1],
            worst_ratio=f"{worst_ratio:.3f}",
            worst_added_ms=f"{worst_added * 1e3:.3f}",
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    # One run per round, many rounds: the contenders interleave finely, so a shared machine's load
    # swings hit them alike.
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.runs)
