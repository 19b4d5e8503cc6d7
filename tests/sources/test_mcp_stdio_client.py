"""A stdio MCP server's messages are read only up to the size one MCP message may be (4 MiB), however it frames them.

The SDK's stdio client read a line whole (any length, the square of it in CPU); ``sources/mcp_stdio_client`` cuts it
with the same framing as our server and fails the call it answers with ``too_large``, the session going on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.mcp_peers import ROOT
from toolrig.rig import Rig
from toolrig.sources import MAX_MESSAGE_BYTES

pytestmark = pytest.mark.anyio
SERVER = [sys.executable, str(ROOT / "tests" / "support" / "mcp_long_line_server.py")]
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


@pytest.mark.parametrize(
    ("shape", "answer"), [("notice", "after the notice"), ("garbage", "the real answer"), ("deep", "the real answer")]
)
async def test_a_long_line_that_is_no_answer_is_dropped_and_the_answer_after_it_arrives(
    workspace: Path, shape: str, answer: str
) -> None:
    """A notification, a line a server printed for nobody, one too deep to read: none is charged to the call."""
    async with Rig(workspace, config=CONFIG) as rig:
        with anyio.fail_after(60):
            result = await rig.call("long__say", {"size": 2 * MAX_MESSAGE_BYTES, "shape": shape})
    assert not result.is_error, result
    assert answer in str(result.output)


async def test_a_request_of_the_server_over_the_limit_is_answered_with_an_error_not_left_waiting(
    workspace: Path,
) -> None:
    async with Rig(workspace, config=CONFIG) as rig:
        with anyio.fail_after(60):  # unanswered, the server waits, and the call with it
            result = await rig.call("long__say", {"size": MAX_MESSAGE_BYTES + 10, "shape": "ask"})
    assert not result.is_error, result
    reply = json.loads(result.output["text"])  # what the server got back, as it says
    assert reply["id"] == "big-1" and reply["error"]["code"] == -32600
    assert f"over the {MAX_MESSAGE_BYTES:,} toolrig reads" in reply["error"]["message"]


@pytest.mark.parametrize("flag", ["--stubborn", "--stubborn-child"])
async def test_a_server_that_ignores_its_stdin_closing_is_ended_with_its_group_whatever_ignores_sigterm(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    """The server and its child both ignore SIGTERM, or only the child does (the server dies of it, the child not)."""
    from toolrig.sources import mcp_stdio_client

    monkeypatch.setattr(mcp_stdio_client, "GRACE_SECONDS", 0.3)  # each of the two waits: 2 s of nothing otherwise
    pidfile = tmp_path / "pids"
    config = {"mcp_servers": {"long": {"command": SERVER[0], "args": [*SERVER[1:], flag, str(pidfile)]}}}
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

    pending: dict[object, int | str] = {}
    for request_id in (1, 2):
        _note_sent(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={}), pending)
    nameless = Oversized(b'{"result": {"content": "xx', 9_000_000, b'xxx"}}')
    assert _message(nameless, 100, pending) is None  # two wait: whose it is cannot be told, so it fails neither
    assert _message(Oversized(b'{"id": 7, "result": "', 9_000_000), 100, pending) is None  # nobody waits for 7
    _note_sent(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 1}), pending)
    assert list(pending) == [2]  # the client gave up on 1 (its timeout)
    failed = _message(nameless, 100, pending).message
    assert isinstance(failed, JSONRPCError) and failed.id == 2 and "over 100 bytes" in failed.error.message
    assert pending == {}
    _note_sent(JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params={}), pending)
    notice = Oversized(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": "', 9_000_000)
    garbage = Oversized(b"DEBUG: " + b"x" * 100, 9_000_000)
    for line in (notice, garbage):
        assert _message(line, 100, pending) is None and list(pending) == [3]  # never taken for the answer


def test_an_id_the_server_echoes_as_text_is_the_same_request_as_the_sdk_has_it() -> None:
    """The SDK matches "7" with 7 (as the TypeScript SDK does): so does the list of requests still waiting."""
    from mcp.types import JSONRPCError, JSONRPCRequest

    from toolrig.sources.mcp_lines import Oversized
    from toolrig.sources.mcp_stdio_client import _message, _note_sent

    pending: dict[object, int | str] = {}
    for request_id in (7, 8):
        _note_sent(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={}), pending)
    failed = _message(Oversized(b'{"jsonrpc": "2.0", "id": "7", "result": {"x": "', 9_000_000), 100, pending).message
    assert isinstance(failed, JSONRPCError) and str(failed.id) == "7"
    assert _message(b'{"jsonrpc": "2.0", "id": "8", "result": {}}', 100, pending) is not None
    assert pending == {}  # both answered: none left behind to spoil the one-waiting rule
