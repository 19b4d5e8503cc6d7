"""Subagent overhead: a child that answers at once against a plain run, and 32 children against the slowest one.

Both measured against the same local server speaking the Anthropic wire protocol (``tests/support/fake_llm.py``
in a process of its own, answering each request by its prompt's marker), contenders alternated round by
round, one provider for every run, sessions off (no SQLite writes) on both sides.

1. Overhead per child. A = a parent run that spawns one child which answers at once (3 model requests);
   B = a parent run that calls a trivial tool instead (2 requests); C = a plain one-turn run (1 request).
   A child is one plain run plus what spawning adds, so overhead = A - B - C. Target: under 5 ms.
2. Parallel. The spawn_agents call of 32 children, each calling a tool that sleeps 1 s then answering,
   against one such run alone (the slowest child). Target: under 1.5x.

    python benchmarks/subagents.py [--rounds 30] [--children 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
from tests.support.fake_llm import Call, FakeLLM, Text, reply  # noqa: E402
from tests.support.sample_tools import add  # noqa: E402
from tests.support.subagent_conversations import Conversations  # noqa: E402

from _harness import alternate_async, fmt_seconds, print_table, result_line  # noqa: E402
from toolrig import tool  # noqa: E402
from toolrig.agent import RunOptions, run_agent  # noqa: E402
from toolrig.agent.providers import make_provider, settings_from  # noqa: E402
from toolrig.events import Event  # noqa: E402
from toolrig.registry import Registry  # noqa: E402
from toolrig.rig import Rig  # noqa: E402
from toolrig.tools.agents import TOOLS as AGENT_TOOLS  # noqa: E402

NAP_SECONDS = 1.0


@tool(read_only=True)
async def nap() -> str:
    """Sleep a fixed time, like a slow tool."""
    await anyio.sleep(NAP_SECONDS)
    return "rested"


def spawn(*prompts: str) -> Call:
    agents = [{"agent_type": "general", "prompt": p} for p in prompts]
    return Call("s1", "spawn_agents", json.dumps({"agents": agents}))


def scripts(children: int) -> dict[str, list[Any]]:
    return {
        "SPAWNONE": [reply(spawn("answer QUICKCHILD")), reply(Text("done"))],
        "QUICKCHILD": [reply(Text("at once"))],
        "TOOLONE": [reply(Call("a1", "add", '{"a": 1, "b": 2}')), reply(Text("done"))],
        "PLAIN": [reply(Text("at once"))],
        "SPAWNMANY": [reply(spawn(*[f"nap SLOWCHILD{i}" for i in range(children)])), reply(Text("done"))],
        "SLOWCHILD": [reply(Call("n1", "nap", "{}")), reply(Text("rested"))],
    }


def serve(children: int) -> None:
    """The server process: prints its port, serves until stdin closes."""
    llm = FakeLLM(responder=Conversations(scripts(children))).start()
    print(llm.port, flush=True)
    sys.stdin.read()
    llm.stop()


async def main(rounds: int, children: int) -> None:
    import subprocess

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--children", str(children)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    port = int(server.stdout.readline())
    try:
        await _measure(port, rounds, children)
    finally:
        server.stdin.close()
        server.wait(10)


async def _measure(port: int, rounds: int, children: int) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="bench-subagents-"))
    config = {
        "llm": {
            "provider": "anthropic",
            "model": "claude-bench",
            "base_url": f"http://127.0.0.1:{port}",
            "api_key": "bench-key",
            "max_retries": 0,
        },
        "subagents": {"max_parallel": children, "max_children": 10_000},
    }
    rig = Rig(workspace, config=config, registry=Registry([add, nap, *AGENT_TOOLS]))
    # One provider for every run, as a program that runs many would hold (children share their parent's).
    provider = make_provider(settings_from(rig.config.llm))
    options = RunOptions(persist=False, provider=provider)

    async def run(prompt: str, on_event: Any = None) -> None:
        await run_agent(prompt, options, rig=rig, on_event=on_event)

    try:
        for prompt in ("SPAWNONE", "TOOLONE", "PLAIN"):  # warm up: imports, SDK clients, code paths
            await run(prompt)
        series = await alternate_async(
            {"A spawn one child": lambda: run("SPAWNONE"), "B one tool call": lambda: run("TOOLONE"),
             "C plain run": lambda: run("PLAIN")},
            rounds=rounds,
            per_round=1,
        )  # fmt: skip
        a, b, c = (s.median for s in series.values())
        overhead = a - b - c
        print_table(
            "Subagents: one child that answers at once (medians)",
            [(name, fmt_seconds(s.median), fmt_seconds(s.p99)) for name, s in series.items()]
            + [("overhead per child = A - B - C", fmt_seconds(overhead), "")],
            ("contender", "median", "p99"),
        )
        print(result_line("subagents_overhead", a, b + c, overhead_ms=f"{overhead * 1000:.2f}", target_ms=5))

        spans: list[float] = []
        alone: list[float] = []
        for _ in range(max(3, rounds // 6)):
            marks: dict[str, float] = {}

            def on_event(event: Event, marks: dict[str, float] = marks) -> None:
                if getattr(event, "task_id", None) is None and getattr(event, "name", "") == "spawn_agents":
                    marks[event.type] = time.perf_counter()

            await run("SPAWNMANY", on_event)
            spans.append(marks["tool_result"] - marks["tool_call"])
            start = time.perf_counter()
            await run("SLOWCHILD-alone")
            alone.append(time.perf_counter() - start)
        many, one = statistics.median(spans), statistics.median(alone)
        print_table(
            f"Subagents: {children} children in parallel against the slowest child alone (medians)",
            [(f"spawn_agents with {children} children", fmt_seconds(many)), ("one child run alone", fmt_seconds(one))],
            ("contender", "median"),
        )
        print(result_line("subagents_parallel", many, one, children=children, target_ratio=1.5))
    finally:
        await provider.aclose()
        rig.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--children", type=int, default=32)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.children)
    else:
        anyio.run(main, args.rounds, args.children)
