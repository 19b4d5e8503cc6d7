"""The gateway under load: 20 sessions at once, each with tool calls, streamed to 20 SSE clients.

The model is ``tests/support/fake_llm.py`` in its own process: each run asks it four times (three calls to a
trivial tool, then 50 text fragments), the reply picked by the request itself so concurrent runs do not share
one script. Ours: ``toolrig serve``'s app in a thread of this process, 20 clients (httpx2, async) each starting a
run and reading its events over SSE. Peer: the same 20 runs through ``run_agent`` in-process with no HTTP at all.
Printed: wall time for all 20, events/s through SSE, and the latency of each event from the moment the run
published it to the moment its client parsed it (median and p99): one slow stream would show as a long tail.

    python benchmarks/gateway.py [--sessions 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import httpx2  # noqa: E402
from tests.support.sample_tools import add  # noqa: E402

from _harness import fmt_seconds, print_table, result_line  # noqa: E402
from toolrig.adapters.mcp_http import bind  # noqa: E402
from toolrig.agent import RunOptions, run_agent  # noqa: E402
from toolrig.gateway import runs as gateway_runs  # noqa: E402
from toolrig.gateway.server import make_server  # noqa: E402
from toolrig.registry import Registry  # noqa: E402
from toolrig.rig import Rig  # noqa: E402

TOKEN = "bench-token-" + "x" * 24
PUBLISHED: dict[tuple[str, int], float] = {}


def serve_llm() -> None:
    """``--serve-llm``: the fake model server; answers by the number of assistant turns in the request."""
    from tests.support.fake_llm import Call, FakeLLM, Text, reply

    def responder(body: dict[str, Any]) -> Any:
        turns = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if turns < 3:
            return reply(Call(f"c{turns}", "add", '{"a": 1, "b": 2}'))
        return reply(Text(*[f"word{i} " for i in range(50)]))

    server = FakeLLM(responder=responder).start()
    print(server.port, flush=True)
    sys.stdin.read()
    server.stop()


def record_publish_times() -> None:
    """Stamp each event when its run publishes it (same process, same clock as the clients)."""
    original = gateway_runs.LiveRun.publish

    def publish(self: gateway_runs.LiveRun, data: dict[str, Any]) -> None:
        original(self, data)
        PUBLISHED[(self.id, self.last_seq)] = time.perf_counter()

    gateway_runs.LiveRun.publish = publish  # type: ignore[method-assign]


def make_rig(workspace: Path, port: int) -> Rig:
    llm = {"provider": "anthropic", "model": "claude-test", "base_url": f"http://127.0.0.1:{port}",
           "api_key": "k", "max_retries": 0}  # fmt: skip
    return Rig(workspace, config={"llm": llm}, registry=Registry([add]))


async def one_client(client: httpx2.AsyncClient, index: int, latencies: list[float]) -> int:
    run = (await client.post("/api/runs", json={"prompt": f"session {index}"})).json()
    count = 0
    async with client.stream("GET", f"/api/runs/{run['id']}/events") as response:
        seq = 0
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: "):
                now = time.perf_counter()
                event = json.loads(line[6:])
                latencies.append(now - PUBLISHED.get((run["id"], seq), now))
                count += 1
                if event["type"] == "run_end":
                    assert event["status"] == "completed", event
                    break
    return count


async def gateway_round(base: str, sessions: int) -> tuple[float, int, list[float]]:
    latencies: list[float] = []
    counts: list[int] = []
    limits = httpx2.Limits(max_connections=sessions * 2)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=120, limits=limits) as client:
        start = time.perf_counter()

        async def go(i: int) -> None:
            counts.append(await one_client(client, i, latencies))

        async with anyio.create_task_group() as tasks:
            for i in range(sessions):
                tasks.start_soon(go, i)
        return time.perf_counter() - start, sum(counts), latencies


async def direct_round(rig: Rig, sessions: int) -> float:
    start = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for i in range(sessions):
            tasks.start_soon(lambda i=i: run_agent(f"session {i}", RunOptions(), rig=rig, on_event=lambda e: None))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-llm", action="store_true")
    args = parser.parse_args()
    if args.serve_llm:
        serve_llm()
        return
    llm = subprocess.Popen([sys.executable, __file__, "--serve-llm"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, cwd=ROOT)  # fmt: skip
    assert llm.stdout is not None and llm.stdin is not None
    port = int(llm.stdout.readline())
    record_publish_times()
    with tempfile.TemporaryDirectory() as folder:
        rig = make_rig(Path(folder), port)
        sock = bind("127.0.0.1", 0)
        server, base = make_server(rig, sock, token=TOKEN)
        thread = threading.Thread(target=anyio.run, args=(lambda: server.serve(sockets=[sock]),), daemon=True)
        thread.start()
        anyio.run(gateway_round, base, 2)  # warm-up: imports, the session database
        anyio.run(direct_round, rig, 2)
        walls, direct, events, latencies = [], [], 0, []
        for _ in range(args.rounds):
            wall, count, lat = anyio.run(gateway_round, base, args.sessions)
            walls.append(wall)
            events += count
            latencies += lat
            direct.append(anyio.run(direct_round, rig, args.sessions))
        server.should_exit = True
        thread.join(30)
    llm.stdin.close()
    llm.wait(10)
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    ours, peer = statistics.median(walls), statistics.median(direct)
    rate = events / sum(walls)
    rows = [
        ("gateway (HTTP + SSE)", fmt_seconds(ours), f"{rate:,.0f}", fmt_seconds(statistics.median(ordered)),
         fmt_seconds(p99)),
        ("run_agent in-process", fmt_seconds(peer), "-", "-", "-"),
    ]  # fmt: skip
    print_table(
        f"{args.sessions} sessions at once, 4 model turns and 3 tool calls each, {args.rounds} rounds",
        rows,
        ("contender", "wall (median)", "events/s", "event latency median", "p99"),
    )
    print(result_line("gateway", ours, peer, events_per_s=f"{rate:.0f}", p99_latency_ms=f"{p99 * 1e3:.2f}"))


if __name__ == "__main__":
    main()
