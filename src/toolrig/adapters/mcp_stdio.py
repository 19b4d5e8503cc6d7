"""MCP over this process's stdin and stdout without a worker thread per line.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``: every line read and every message
written (write, then flush) is a hop to a worker thread, three or more per call. When stdin and stdout are
pipes or sockets (as an MCP client starts us) this transport waits on the descriptors in the event loop
instead; for anything else (a regular file, say) ``stdio_streams`` falls back to the SDK's transport.

Given a fast path (``mcp_server.FastToolCalls``), the plain ``tools/call`` requests it accepts are answered
here without the SDK's request pipeline; every other message goes to the SDK as before.

Trust model: the protocol owns the real stdin and stdout. While serving, descriptor 0 reads the null
device and descriptor 1 writes to stderr, so a tool or child process that reads stdin or prints cannot
swallow or corrupt protocol messages; both are restored afterwards.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


class FastPath(Protocol):
    @property
    def decided(self) -> bool: ...

    def opening(self, message: dict[str, Any]) -> None: ...

    def accept(self, message: dict[str, Any]) -> Callable[[], Awaitable[bytes]] | None: ...


log = logging.getLogger("toolrig.mcp")

_CHUNK = 1 << 16


def _pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _Wire:
    """Our stdout: whole messages, one writer at a time (the SDK's messages and the fast path's answers)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = anyio.Lock()
        self.closed = False

    async def write(self, data: bytes) -> None:
        async with self._lock:
            view = memoryview(data)
            while view and not self.closed:
                try:
                    written = os.write(self.fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    log.debug("the MCP client closed our stdout")
                    self.closed = True
                    return
                view = view[written:]


@asynccontextmanager
async def stdio_streams(fast: FastPath | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) stream pair a low-level MCP ``Server.run`` takes, over fds 0 and 1."""
    if not (_pollable(0) and _pollable(1)):
        from mcp.server.stdio import stdio_server

        async with stdio_server() as streams:
            yield streams
        return
    from mcp.shared.message import SessionMessage

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    os.set_blocking(wire_in, False)
    os.set_blocking(wire_out, False)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        out = _Wire(wire_out)
        async with anyio.create_task_group() as group:
            group.start_soon(_read_lines, wire_in, read_send, out, fast, group)
            group.start_soon(_write_messages, out, write_receive)
            yield read_receive, write_send
            group.cancel_scope.cancel()
    finally:
        for fd, wire in ((0, wire_in), (1, wire_out)):
            os.set_blocking(wire, True)
            os.dup2(wire, fd)
            os.close(wire)


async def _read_lines(
    fd: int, send: MemoryObjectSendStream[Any], wire: _Wire, fast: FastPath | None, group: TaskGroup
) -> None:
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    calls: dict[int | str, anyio.CancelScope] = {}  # fast-path calls in flight, for notifications/cancelled
    buffer = b""
    async with send:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                if fast is not None and _took_fast(line, fast, wire, calls, group):
                    continue
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:  # pydantic's ValidationError: the runner answers with an error
                    await send.send(exc)
                    continue
                await send.send(SessionMessage(message))


def _took_fast(
    line: bytes, fast: FastPath, wire: _Wire, calls: dict[int | str, anyio.CancelScope], group: TaskGroup
) -> bool:
    """Start a fast-path call for this line and say so; otherwise it goes to the SDK (cancellations too)."""
    if fast.decided and b'"tools/call"' not in line and b"notifications/cancelled" not in line:
        return False
    from pydantic_core import from_json

    try:
        message = from_json(line)  # the SDK's parser: what it refuses (lone surrogates...) goes its way
    except ValueError:
        return False
    if not isinstance(message, dict):
        return False
    if not fast.decided:
        fast.opening(message)
    if message.get("method") == "notifications/cancelled":
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if type(request_id) in (int, str) and request_id in calls:
            calls[request_id].cancel()
        return False
    answer = fast.accept(message)
    if answer is None:
        return False
    # Registered before the task starts: a cancellation read in the same chunk must find it.
    scope = calls[message["id"]] = anyio.CancelScope()
    group.start_soon(_answer_fast, answer, message["id"], scope, wire, calls)
    return True


async def _answer_fast(
    answer: Callable[[], Awaitable[bytes]],
    request_id: int | str,
    scope: anyio.CancelScope,
    wire: _Wire,
    calls: dict[int | str, anyio.CancelScope],
) -> None:
    with scope:
        try:
            data = await answer()
        finally:
            if calls.get(request_id) is scope:
                del calls[request_id]
        await wire.write(data)


async def _write_messages(wire: _Wire, receive: MemoryObjectReceiveStream[Any]) -> None:
    async with receive:
        async for message in receive:
            await wire.write((message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())
            if wire.closed:
                return
