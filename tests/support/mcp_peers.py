"""Real MCP peers for the tests: our server as a subprocess, and third-party servers and clients from npm."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "tests" / "peers" / "node_modules"
INSTALL_HINT = "install the test peers: `npm ci --prefix tests/peers` (bash .ci/run does it)"


def toolrig_command() -> str:
    found = shutil.which("toolrig", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the `toolrig` script is not installed next to this Python: pip install -e '.[all,dev]'")
    return found


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed: apt-get install -y nodejs npm (node 20 or later)")
    return found


def npm_peer(relative: str) -> Path:
    """A file of an npm package from tests/peers, or a test failure that says how to install it."""
    path = NODE_MODULES / relative
    if not path.exists():
        pytest.fail(f"{path} is missing: {INSTALL_HINT}")
    return path


def everything_server() -> list[str]:
    return [node(), str(npm_peer("@modelcontextprotocol/server-everything/dist/index.js"))]


def filesystem_server(*roots: Path) -> list[str]:
    return [node(), str(npm_peer("@modelcontextprotocol/server-filesystem/dist/index.js")), *map(str, roots)]


def inspector() -> list[str]:
    return [node(), str(npm_peer("@modelcontextprotocol/inspector/clients/launcher/build/index.js")), "--cli"]


def serve_params(workspace: Path, home: Path, *extra: str) -> StdioServerParameters:
    """``toolrig mcp serve`` itself, as a client would start it."""
    return StdioServerParameters(
        command=toolrig_command(),
        args=["mcp", "serve", "--root", str(workspace), *extra],
        env={"TOOLRIG_HOME": str(home)},
    )


def fixture_params(workspace: Path, home: Path, *extra: str) -> StdioServerParameters:
    """Our MCP server with test tools and a test approval gate (tests/support/mcp_fixture_server.py)."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.support.mcp_fixture_server", "--root", str(workspace), *extra],
        env={"TOOLRIG_HOME": str(home), "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )


@asynccontextmanager
async def stdio_session(params: StdioServerParameters, log: Path, **options: Any) -> AsyncIterator[Client]:
    """The official client on a server subprocess; the server's stderr goes to ``log``."""
    with log.open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), **options) as client:
            yield client


@contextmanager
def running(args: list[str], *, env: dict[str, str], cwd: Path | None = None) -> Iterator[subprocess.Popen[str]]:
    """A server process for the test's duration; stopped (by its pid) however the test ends."""
    process = subprocess.Popen(
        args, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if process.stderr is not None:
            process.stderr.close()
