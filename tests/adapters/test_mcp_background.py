"""Over stdio the MCP server owns its client's background commands: started, read, and stopped with the session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.procs import alive as _alive
from tests.support.procs import token as _token


def test_a_stdio_client_s_background_command_runs_is_read_and_ends_with_the_session(
    workspace: Path, toolrig_home: Path
) -> None:
    token = _token()
    server = subprocess.Popen(
        [sys.executable, "-m", "toolrig", "mcp", "serve", "--root", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None

    def ask(request_id: int, method: str, **params: Any) -> dict[str, Any]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(
            (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n").encode()
        )
        server.stdin.flush()
        while True:
            answer = json.loads(server.stdout.readline())
            if answer.get("id") == request_id:
                return dict(answer["result"])

    try:
        ask(1, "initialize", protocolVersion="2025-06-18", capabilities={}, clientInfo={"name": "t", "version": "1"})
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        command = {"command": f"echo hello; sleep {token}", "background": True}
        started = ask(2, "tools/call", name="run_command", arguments=command)["structuredContent"]
        assert started["background_id"] == "bg1"
        read = ask(3, "tools/call", name="command_output", arguments={"id": "bg1", "wait_seconds": 30})
        assert read["structuredContent"]["stdout"] == "hello\n" and read["structuredContent"]["status"] == "running"
        assert _alive(token)
        server.stdin.close()  # the client goes: its session ends
        assert server.wait(timeout=60) == 0
        assert _alive(token) == []
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()
