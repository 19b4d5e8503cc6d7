"""Sequential ``tools/call`` round trips over stdio with the official ``mcp`` client: our server vs the SDK's.

Contenders, each a real server subprocess driven by the same client (``mcp.Client``, default mode), rounds
interleaved in one run:

- ``toolrig mcp serve`` calling the built-in ``calculate`` ("2 + 3"): the command as users run it;
- toolrig's MCP server exposing a trivial ``add(a, b)`` tool (the code ``toolrig mcp serve`` runs, with
  one more tool registered): the like-for-like contender;
- a minimal ``mcp`` SDK ``MCPServer`` (v2 FastMCP) exposing the same ``add`` (the peer);
- a minimal standalone ``fastmcp`` server exposing the same ``add``.

Target (issue 19): ours (add) at least twice the calls per second of the SDK's MCPServer: ratio >= 2.0.
``PYTHONPATH`` is passed on to the servers, so another checkout's ``src`` can be measured the same way.

    python benchmarks/mcp_roundtrip.py [--rounds N] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from _harness import fmt_seconds, machine, print_table, result_line

TOOLRIG_ADD = """
import anyio
from toolrig import Rig, tool
from toolrig.adapters.mcp_server import McpToolServer

@tool(read_only=True)
async def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

anyio.run(McpToolServer(Rig({root!r}, tools=[add])).serve_stdio)
"""

SDK_ADD = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("peer")

@app.tool()
async def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

app.run()
"""

FASTMCP_ADD = """
from fastmcp import FastMCP

app = FastMCP("peer")

@app.tool
async def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

app.run(show_banner=False)
"""


def children() -> dict[int, str]:
    """This process's child processes (the servers) and their command lines, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                found[int(entry.name)] = (entry / "cmdline").read_text().replace("\0", " ")
        except (OSError, IndexError, ValueError):
            continue
    return found


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used: less sensitive to a busy machine than wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def contenders(root: str, home: str) -> dict[str, tuple[StdioServerParameters, str, dict[str, Any]]]:
    toolrig = str(Path(sys.executable).parent / "toolrig")
    env = {"TOOLRIG_HOME": home, "FASTMCP_LOG_LEVEL": "WARNING"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    python = sys.executable
    add = {"a": 2, "b": 3}
    # cwd: a server started as `python -c` puts its cwd first on sys.path, where a benchmark module could
    # shadow the standard library's glob.
    return {
        "toolrig mcp serve (calculate)": (
            StdioServerParameters(command=toolrig, args=["mcp", "serve", "--root", root], env=env, cwd=root),
            "calculate",
            {"expression": "2 + 3"},
        ),
        "toolrig MCP server (add)": (
            StdioServerParameters(command=python, args=["-c", TOOLRIG_ADD.format(root=root)], env=env, cwd=root),
            "add",
            add,
        ),
        "mcp SDK MCPServer (add)": (
            StdioServerParameters(command=python, args=["-c", SDK_ADD], env=env, cwd=root),
            "add",
            add,
        ),
        "fastmcp FastMCP (add)": (
            StdioServerParameters(command=python, args=["-c", FASTMCP_ADD], env=env, cwd=root),
            "add",
            add,
        ),
    }


async def main(rounds: int, calls: int) -> None:
    root = tempfile.mkdtemp()
    home = tempfile.mkdtemp()
    servers = contenders(root, home)
    latencies: dict[str, list[float]] = {name: [] for name in servers}
    rates: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, float] = dict.fromkeys(servers, 0.0)
    with open(os.devnull, "w") as devnull:
        async with AsyncExitStack() as stack:
            clients = {}
            pids: dict[str, int] = {}
            for name, (params, tool, args) in servers.items():
                known = set(children())
                client = await stack.enter_async_context(Client(stdio_client(params, errlog=devnull)))
                new = [pid for pid in children() if pid not in known]
                pids[name] = new[0]
                for _ in range(50):  # warm up: imports, caches, the first listing
                    result = await client.call_tool(tool, args)
                    assert not result.is_error, (name, result)
                clients[name] = client
            for _ in range(rounds):
                for name, (_, tool, args) in servers.items():
                    client = clients[name]
                    used = cpu_seconds(pids[name])
                    start = time.perf_counter()
                    for _ in range(calls):
                        before = time.perf_counter()
                        await client.call_tool(tool, args)
                        latencies[name].append(time.perf_counter() - before)
                    rates[name].append(calls / (time.perf_counter() - start))
                    cpu[name] += cpu_seconds(pids[name]) - used
    rows = []
    p50s = {}
    for name in servers:
        ordered = sorted(latencies[name])
        p50 = p50s[name] = ordered[len(ordered) // 2]
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        rate = f"{statistics.median(rates[name]):.0f}"
        rows.append((name, rate, fmt_seconds(p50), fmt_seconds(p99), fmt_seconds(cpu[name] / (rounds * calls))))
    print_table(
        f"tools/call round trips over stdio, {rounds} rounds x {calls} calls (medians of rounds)",
        rows,
        ("server", "calls/s", "p50", "p99", "server CPU/call"),
    )
    ours = statistics.median(rates["toolrig MCP server (add)"])
    peer = statistics.median(rates["mcp SDK MCPServer (add)"])
    served = statistics.median(rates["toolrig mcp serve (calculate)"])
    print(f"\nmachine: {machine()}")
    cpu_ratio = cpu["mcp SDK MCPServer (add)"] / cpu["toolrig MCP server (add)"]
    # p50_ratio: the SDK's median round trip over ours, steadier than calls/s when a busy machine stalls a round.
    p50_ratio = p50s["mcp SDK MCPServer (add)"] / p50s["toolrig MCP server (add)"]
    extra = {
        "serve_calculate": f"{served:.0f}calls/s",
        "cpu_ratio": f"{cpu_ratio:.3f}",
        "p50_ratio": f"{p50_ratio:.3f}",
    }
    print(result_line("mcp_roundtrip", ours, peer, unit="calls/s", target=">=2", **extra))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.calls)
