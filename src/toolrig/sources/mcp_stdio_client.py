"""A stdio MCP server's messages, each read only up to the size one MCP message may be.

The SDK's ``stdio_client`` reads a server's lines whole, joining every chunk to the line so far: one endless
line from a broken or hostile server (a package from a registry, started from trusted config) made toolrig
hold any amount of memory and spend the square of its length in CPU, while a remote server's replies were
already bounded (``mcp_bounded``). This transport cuts lines with the server's own framing (``mcp_lines``)
and answers an oversized reply for the server: a JSON-RPC error to the request it answers (its id read near
either end), so that call fails with a message that says why and the session goes on.

The process's life is the SDK's: its own session, stderr to the log, and at the end stdin closed, a grace
period, then the whole group terminated and killed. POSIX only; elsewhere ``_streams`` uses the SDK's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from toolrig.sources import MAX_MESSAGE_BYTES
from toolrig.sources.mcp_bounded import TOO_LARGE
from toolrig.sources.mcp_lines import Lines, Oversized

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream, ByteSendStream, Process
    from mcp.client._transport import TransportStreams
    from mcp.client.stdio import StdioServerParameters

log = logging.getLogger("toolrig.mcp")

GRACE_SECONDS = 2.0  # after stdin closes, before the group is terminated; then as long again before it is killed
_CHUNK = 65536


@asynccontextmanager
async def stdio_client(
    params: StdioServerParameters, errlog: TextIO, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[TransportStreams]:
    """Start the server and carry its messages both ways until the block ends, then stop it and its group."""
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,
    )
    stdin, stdout = process.stdin, process.stdout
    if stdin is None or stdout is None:  # open_process makes both pipes unless told otherwise
        raise OSError("the server's stdin and stdout were not opened as pipes")
    read_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    pending: dict[int | str, int | str] = {}  # requests sent and not answered, by _key: whose an oversized answer is
    sending = anyio.Lock()  # the session's messages and our refusals of the server's oversized requests

    async def send(data: bytes) -> None:
        async with sending:
            await stdin.send(data)

    async def reader() -> None:
        lines = Lines(limit)
        async with read_in:
            try:
                async for chunk in stdout:
                    for line in lines.feed(chunk):
                        if isinstance(line, Oversized) and line.kind() == "message":
                            refusal = _refused_request(line, limit)
                            if refusal is not None:  # its request: answered, or the call behind it waits for ever
                                await send(refusal)
                            continue
                        message = _message(line, limit, pending)
                        if message is not None:
                            await read_in.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass  # the session is gone, or we closed the pipe under the read
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            while await stdout.receive(_CHUNK):  # a server blocked writing cannot see its stdin close
                pass

    async def writer() -> None:
        try:
            async with write_out:
                async for outgoing in write_out:
                    message = outgoing.message
                    _note_sent(message, pending)
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()  # the server stopped reading: the session hears the end, not silence

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled caller must not leave the server running
                read_stream.close()
                write_stream.close()
                await _stop(process, stdin, stdout)
            group.cancel_scope.cancel()


def _key(request_id: object) -> object:
    """An id as the SDK correlates it: "7" and 7 are one id (as in the TypeScript SDK)."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


def _note_sent(message: Any, pending: dict[Any, int | str]) -> None:
    """Keep ``pending`` to the requests still waiting: a request adds its id, giving one up (a timeout) removes it."""
    method, sent_id = getattr(message, "method", None), getattr(message, "id", None)
    if method is not None and isinstance(sent_id, int | str):
        pending[_key(sent_id)] = sent_id
    elif method == "notifications/cancelled" and isinstance(params := getattr(message, "params", None), dict):
        pending.pop(_key(params.get("requestId")), None)


def _message(line: bytes | Oversized, limit: int, pending: dict[Any, int | str]) -> Any:
    """What the session gets for one line: a message, the parse error it reports, or None for nothing."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    if isinstance(line, Oversized):
        log.warning("an MCP server sent a %d-byte message (over %d); it was not read", line.size, limit)
        if line.kind() != "answer":
            return None  # a line printed for nobody, or one too deep to read: no request of ours is charged with it
        request_id = line.request_id()
        if request_id is None and len(pending) == 1:
            request_id = next(iter(pending.values()))  # one request waits: the answer is its
        if request_id is None or _key(request_id) not in pending:
            return None  # nothing waits for it by a name we can read: dropped, as the log says
        line = _too_large(request_id, line.size, limit)
    elif not line.strip():
        return None
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:  # the session reports it; the connection goes on
        return exc
    answered = getattr(message, "id", None) if getattr(message, "method", None) is None else None
    if answered is not None:
        pending.pop(_key(answered), None)
    return SessionMessage(message)


def _too_large(request_id: int | str, size: int, limit: int) -> bytes:
    from pydantic_core import to_json

    text = f"{TOO_LARGE} {limit:,} bytes, the most one MCP message may be (it was {size:,} bytes)"
    return to_json({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": text}})


def _refused_request(line: Oversized, limit: int) -> bytes | None:
    """The error that answers the server's own oversized request (sampling, a form...), or None for a notification."""
    from pydantic_core import to_json

    request_id = line.request_id()
    if request_id is None:
        return None
    text = f"The request was {line.size:,} bytes, over the {limit:,} toolrig reads from an MCP server; it was not read."
    return to_json({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": text}}) + b"\n"


async def _stop(process: Process, stdin: ByteSendStream, stdout: ByteReceiveStream) -> None:
    """The MCP lifecycle's shutdown, in the SDK's order: stdin closed, a grace period.

    A server still there then has its whole group terminated and, whatever in the group outlives the grace, killed.
    """
    from mcp.os.posix.utilities import terminate_posix_process_tree

    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdin.aclose()
    if not await _exited(process):
        await terminate_posix_process_tree(process, GRACE_SECONDS)  # waits for the group, not only the server
        await _exited(process)
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdout.aclose()


async def _exited(process: Process) -> bool:
    """Whether the server ended within the grace period.

    By its exit code: ``wait()`` on asyncio waits for the pipes too, which a child of the server may hold.
    """
    with anyio.move_on_after(GRACE_SECONDS):
        while process.returncode is None:  # noqa: ASYNC110 - nothing to wait on that macOS has as well
            await anyio.sleep(0.01)
    return process.returncode is not None
