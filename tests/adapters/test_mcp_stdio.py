"""Our stdio transport: the protocol owns the pipes, big messages cross intact, and files fall back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.adapters.mcp_peers import fixture_params, serve_params, stdio_session, toolrig_command

pytestmark = pytest.mark.anyio


async def test_stray_output_and_stdin_readers_never_touch_the_protocol(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    async with stdio_session(fixture_params(workspace, toolrig_home), log) as client:
        result = await client.call_tool("noisy", {"tag": "intact"})
        # `cat` read the null device (EOF at once), not our protocol pipe.
        assert result.structured_content == {"text": "intact", "child_read": 0}
        after = await client.call_tool("count_up", {"steps": 1})
        assert after.structured_content == {"counted": 1}
    assert "junk from print()" in log.read_text() and "junk written to fd 1" in log.read_text()


async def test_messages_larger_than_a_pipe_buffer_cross_both_ways(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    text = "é" * 45_000 + "end"  # 90 kB of UTF-8 each way, under the 100,000-character output cap
    async with stdio_session(fixture_params(workspace, toolrig_home), tmp_path / "server.log") as client:
        result = await client.call_tool("noisy", {"tag": text})
    assert result.structured_content is not None and result.structured_content["text"] == text


def test_a_regular_file_on_stdin_is_served_by_the_sdk_transport(workspace: Path, toolrig_home: Path) -> None:
    requests = workspace.parent / "requests.jsonl"
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n")
    params = serve_params(workspace, toolrig_home)
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [toolrig_command(), *params.args],
            stdin=stdin,
            capture_output=True,
            timeout=60,
            env={**os.environ, **(params.env or {})},
            check=False,
        )
    [answer] = map(json.loads, done.stdout.decode().splitlines())
    assert answer["result"]["serverInfo"]["name"] == "toolrig"


async def test_a_fast_path_call_cancelled_in_the_same_read_as_its_request_is_cancelled_and_not_answered() -> None:
    from toolrig.adapters.mcp_stdio import _read_lines, _Wire

    cancelled = anyio.Event()

    async def answer() -> bytes:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return b"never\n"

    class Fast:
        decided = True

        def opening(self, message: dict[str, object]) -> None:
            raise AssertionError("the era is decided")

        def accept(self, message: dict[str, object]) -> object:
            return answer if message.get("method") == "tools/call" else None

    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    os.set_blocking(read_in, False)
    os.write(write_in, (json.dumps(call) + "\n" + json.dumps(cancel) + "\n").encode())
    os.close(write_in)
    send, receive = anyio.create_memory_object_stream[object](10)
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(_read_lines, read_in, send, _Wire(write_out), Fast(), group)
                await cancelled.wait()
        forwarded = [message async for message in receive]  # the reader closed it at end of input
        assert len(forwarded) == 1  # the cancellation still reaches the SDK; the call did not
        os.close(write_out)
        write_out = -1
        assert os.read(read_out, 100) == b""  # nothing was answered
    finally:
        for fd in (read_in, read_out, write_out):
            if fd >= 0:
                os.close(fd)
        receive.close()
