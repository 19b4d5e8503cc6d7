"""A stdio MCP server's messages are read only up to the size one MCP message may be (4 MiB), however it frames them.

The SDK's stdio client read a line whole (any length, the square of it in CPU); ``sources/mcp_stdio_client`` cuts it
with the same framing as our server and fails the call it answers with ``too_large``, the session going on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from tests.adapters.mcp_peers import ROOT
from toolrig.rig import Rig
from toolrig.sources import MAX_MESSAGE_BYTES

pytestmark = pytest.mark.anyio
SERVER = [sys.executable, str(ROOT / "tests" / "sources" / "mcp_long_line_server.py")]
CONFIG = {"mcp_servers": {"long": {"command": SERVER[0], "args": SERVER[1:]}}}


@pytest.mark.parametrize("shape", ["id_first", "id_last", "no_id"])
async def test_an_answer_over_the_limit_fails_its_call_and_the_server_stays_usable(shape: str, workspace: Path) -> None:
    async with Rig(workspace, config=CONFIG) as rig:
        with anyio.fail_after(60):  # an answer the client could not match to its call would leave it waiting
            refused = await rig.call("long__say", {"size": MAX_MESSAGE_BYTES + 1000, "shape": shape})
            assert refused.error_type == "too_large", refused
            assert f"over {MAX_MESSAGE_BYTES:,} bytes" in str(refused.message) and refused.next_action_hint
            assert f"it was {MAX_MESSAGE_BYTES + 1000:,}" not in str(refused.message)  # the line, framing included
            # Within the limit (no_id carries the text twice), and many pipe reads long: read whole.
            within = await rig.call("long__say", {"size": 1536 * 1024, "shape": shape})
            assert not within.is_error, within
            assert within.meta.output_bytes > 1536 * 1024  # all of it arrived (the result shows the first part)


async def test_a_notification_over_the_limit_is_dropped_and_the_answer_after_it_arrives(workspace: Path) -> None:
    async with Rig(workspace, config=CONFIG) as rig:
        with anyio.fail_after(60):
            result = await rig.call("long__say", {"size": 2 * MAX_MESSAGE_BYTES, "shape": "notice"})
    assert not result.is_error, result
    assert "after the notice" in str(result.output)


async def test_a_server_that_ignores_its_stdin_closing_and_sigterm_is_killed_with_its_group(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolrig.sources import mcp_stdio_client

    monkeypatch.setattr(mcp_stdio_client, "GRACE_SECONDS", 0.3)  # each of the two waits: 2 s of nothing otherwise
    pidfile = tmp_path / "pids"
    config = {"mcp_servers": {"long": {"command": SERVER[0], "args": [*SERVER[1:], "--stubborn", str(pidfile)]}}}
    async with Rig(workspace, config=config) as rig:
        result = await rig.call("long__say", {"size": 10, "shape": "id_first"})
        assert not result.is_error, result
        pids = [int(pid) for pid in pidfile.read_text().split()]
        for pid in pids:
            os.kill(pid, 0)  # both alive while the rig holds the server
    with anyio.fail_after(30):
        for pid in pids:  # the server reaped by its client; its child, in its group, killed (its new parent reaps it)
            while not ended(pid):
                await anyio.sleep(0.01)


def ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # killed, not yet reaped
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_an_oversized_answer_with_no_readable_id_fails_the_one_call_waiting_and_only_then() -> None:
    from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest

    from toolrig.sources.mcp_lines import Oversized
    from toolrig.sources.mcp_stdio_client import _message, _note_sent

    pending: set[int | str] = set()
    for request_id in (1, 2):
        _note_sent(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={}), pending)
    nameless = Oversized(b'{"result": {"content": "xx', 9_000_000, b'xxx"}}')
    assert _message(nameless, 100, pending) is None  # two wait: whose it is cannot be told, so it fails neither
    assert _message(Oversized(b'{"id": 7, "result": "', 9_000_000), 100, pending) is None  # nobody waits for 7
    _note_sent(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 1}), pending)
    assert pending == {2}  # the client gave up on 1 (its timeout)
    failed = _message(nameless, 100, pending).message
    assert isinstance(failed, JSONRPCError) and failed.id == 2 and "over 100 bytes" in failed.error.message
    assert pending == set()
    notice = Oversized(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": "', 9_000_000)
    _note_sent(JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params={}), pending)
    assert _message(notice, 100, pending) is None and pending == {3}  # never taken for the answer
