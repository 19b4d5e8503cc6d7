"""MCP over this process's stdin and stdout without a worker thread per line.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``: every line read and every message
written (write, then flush) is a hop to a worker thread, three or more per call. When stdin and stdout are
pipes or sockets (as an MCP client starts us) this transport waits on the descriptors in the event loop
instead; for anything else (a regular file, say) ``stdio_streams`` falls back to the SDK's transport.

Trust model: the protocol owns the real stdin and stdout. While serving, descriptor 0 reads the null
device and descriptor 1 writes to stderr, so a tool or child process that reads stdin or prints cannot
swallow or corrupt protocol messages; both are restored afterwards.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

log = logging.getLogger("toolrig.mcp")

_CHUNK = 1 << 16


def _pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
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
        async with anyio.create_task_group() as group:
            group.start_soon(_read_lines, wire_in, read_send)
            group.start_soon(_write_messages, wire_out, write_receive)
            yield read_receive, write_send
            group.cancel_scope.cancel()
    finally:
        for fd, wire in ((0, wire_in), (1, wire_out)):
            os.set_blocking(wire, True)
            os.dup2(wire, fd)
            os.close(wire)


async def _read_lines(fd: int, send: MemoryObjectSendStream[Any]) -> None:
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

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
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:  # pydantic's ValidationError: the runner answers with an error
                    await send.send(exc)
                    continue
                await send.send(SessionMessage(message))


async def _write_messages(fd: int, receive: MemoryObjectReceiveStream[Any]) -> None:
    async with receive:
        async for message in receive:
            data = (message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
            view = memoryview(data)
            while view:
                try:
                    written = os.write(fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(fd)
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    log.debug("the MCP client closed our stdout")
                    return
                view = view[written:]
