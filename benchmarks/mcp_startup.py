"""Time to first answer: spawn an MCP server over stdio until its ``tools/list`` reply arrives.

An MCP client starts ``toolrig mcp serve`` at every launch, so this is what a user waits for. Contenders,
interleaved round by round in one run (a busy machine slows them alike):

- ``toolrig mcp serve`` (the whole built-in catalog, as users run it);
- the official ``mcp`` SDK's minimal ``MCPServer`` with one tool (the peer);
- a minimal ``fastmcp`` ``FastMCP`` server with one tool.

The client side is a few lines of JSON-RPC written by hand (initialize, initialized, tools/list), so the
figure is the server's start-up, not a client's.

Second part: ``toolrig call calculate`` against ``toolrig --help`` (one tool call from the command line
against the CLI's bare start-up), with the floor alongside: ``python -c "from pydantic import BaseModel;
import click, anyio, asyncio"``, the libraries any call imports before toolrig's own work (``call_floor``
is the call against it; ``floor_startup`` the floor against ``toolrig --help``, which shows whether the
1.5x target sits under the floor). A second, working floor adds what any validated call does once: build
and run one pydantic model (which loads pydantic's schema machinery and scans the installed distributions
for pydantic plugins) and run one anyio event loop (``call_working_floor``). Targets: ``mcp_startup`` ratio
<= 1.0 (no slower than the SDK's one-tool server) and ``call_startup`` ratio <= 1.5.

    python benchmarks/mcp_startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import fmt_seconds, print_table, result_line

SDK_ONE_TOOL = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("peer")

@app.tool()
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

app.run()
"""

FASTMCP_ONE_TOOL = """
from fastmcp import FastMCP

app = FastMCP("peer")

@app.tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

app.run(show_banner=False)
"""

PROTOCOL = "2025-06-18"
FLOOR = "floor: pydantic.BaseModel+click+anyio+asyncio"
WORKING_FLOOR = "working floor: + 1 model validated + anyio.run"
WORKING_FLOOR_CODE = """
from pydantic import BaseModel
import click, anyio, asyncio

class Calculate(BaseModel):
    expression: str

async def main() -> None:
    Calculate.model_validate({"expression": "6 * 7"})

anyio.run(main)
"""


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _reply(process: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the server ended before answering request {request_id}")
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)


def spawn_to_tools_list(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds from spawn to the ``tools/list`` reply, and how many tools it listed."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None if os.environ.get("BENCH_DEBUG") else subprocess.DEVNULL,
        env=env,
        cwd=env["TOOLRIG_HOME"],  # not benchmarks/: a module there could shadow the stdlib's
    )
    try:
        _send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            },
        )
        _reply(process, 1)
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = _reply(process, 2)
        elapsed = time.perf_counter() - start
        result = listed.get("result")
        assert isinstance(result, dict), listed
        return elapsed, len(result["tools"])
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env,
                   cwd=env["TOOLRIG_HOME"], check=True)  # fmt: skip
    return time.perf_counter() - start


def main(rounds: int) -> None:
    root = tempfile.mkdtemp()
    home = tempfile.mkdtemp()
    env = {**os.environ, "TOOLRIG_HOME": home, "FASTMCP_LOG_LEVEL": "WARNING"}
    # The warm-up below must leave bytecode behind, as an installed package has it: without this, a shell
    # that sets PYTHONDONTWRITEBYTECODE (ours does) has toolrig compile its sources at every spawn, while
    # the SDKs' come compiled from their wheels.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    toolrig = str(Path(sys.executable).parent / "toolrig")
    servers = {
        "toolrig mcp serve (all tools)": [toolrig, "mcp", "serve", "--root", root],
        "mcp SDK MCPServer (1 tool)": [sys.executable, "-c", SDK_ONE_TOOL],
        "fastmcp FastMCP (1 tool)": [sys.executable, "-c", FASTMCP_ONE_TOOL],
    }
    commands = {
        "toolrig call calculate": [toolrig, "call", "calculate", "--json", '{"expression": "6 * 7"}', "--root", root],
        "toolrig --help": [toolrig, "--help"],
        # The floor under a call: the libraries it cannot do without, before any of toolrig's own work.
        FLOOR: [sys.executable, "-c", "from pydantic import BaseModel; import click, anyio, asyncio"],
        WORKING_FLOOR: [sys.executable, "-c", WORKING_FLOOR_CODE],
        "python -c 'import toolrig.config'": [sys.executable, "-c", "import toolrig.config"],
    }
    for argv in servers.values():  # warm the file cache and the bytecode once, untimed
        spawn_to_tools_list(argv, env)
    for argv in commands.values():
        timed(argv, env)
    spawn: dict[str, list[float]] = {name: [] for name in servers}
    tools: dict[str, int] = {}
    cli: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in servers.items():
            elapsed, tools[name] = spawn_to_tools_list(argv, env)
            spawn[name].append(elapsed)
        for name, argv in commands.items():
            cli[name].append(timed(argv, env))
    rows = [
        (name, str(tools[name]), fmt_seconds(statistics.median(s)), fmt_seconds(min(s)), fmt_seconds(max(s)))
        for name, s in spawn.items()
    ]
    print_table(f"spawn to tools/list answered, {rounds} rounds", rows, ("server", "tools", "median", "min", "max"))
    rows = [(name, fmt_seconds(statistics.median(s)), fmt_seconds(min(s))) for name, s in cli.items()]
    print_table(f"command wall time, {rounds} rounds", rows, ("command", "median", "min"))
    load = os.getloadavg()
    print(f"\nload average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    ours = statistics.median(spawn["toolrig mcp serve (all tools)"])
    peer = statistics.median(spawn["mcp SDK MCPServer (1 tool)"])
    fast = statistics.median(spawn["fastmcp FastMCP (1 tool)"])
    print(result_line("mcp_startup", ours, peer, fastmcp=f"{fast:.3f}s"))
    call, help_, floor = (statistics.median(cli[name]) for name in ("toolrig call calculate", "toolrig --help", FLOOR))
    print(result_line("call_startup", call, help_, floor=f"{floor:.3f}s"))
    print(result_line("call_floor", call, floor))
    print(result_line("floor_startup", floor, help_))
    print(result_line("call_working_floor", call, statistics.median(cli[WORKING_FLOOR])))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    main(parser.parse_args().rounds)
