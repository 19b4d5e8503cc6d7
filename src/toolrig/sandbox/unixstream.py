"""A unix stream socket as an anyio byte stream that may be cancelled at any moment.

Trust model: the peer is a confined command, so it closes or writes exactly when toolrig cancels the read
(a command ending does both). anyio's own unix streams wait on a future a selector callback completes; a
read cancelled in the same loop turn as the peer's write left that callback to complete a cancelled future
(asyncio's ``InvalidStateError``, measured here on anyio 4.16). ``anyio.wait_readable``/``wait_writable``
have no such window, so this stream is built on them: nonblocking calls, woken by readiness.
"""

from __future__ import annotations

import array
import contextlib
import os
import socket

import anyio
import anyio.abc


class UnixStream(anyio.abc.ByteStream):
    """One accepted (or connected) unix stream socket; owns it and closes it in ``aclose``."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data, _ = await self.receive_fds(max_bytes, 0)
        return data

    async def receive_fds(self, max_bytes: int, max_fds: int) -> tuple[bytes, list[int]]:
        """Bytes, and the descriptors passed with them (at most ``max_fds``; the kernel closes any more)."""
        space = socket.CMSG_SPACE(max_fds * array.array("i").itemsize) if max_fds else 0
        while True:
            self._check_open()
            try:
                data, ancillary, _flags, _ = self.sock.recvmsg(max_bytes, space)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            fds = _fds_of(ancillary)
            if not data:
                for fd in fds:
                    os.close(fd)
                raise anyio.EndOfStream
            return data, fds

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            self._check_open()
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await anyio.wait_writable(self.sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[sent:]
        await anyio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        self._check_open()
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            anyio.notify_closing(self.sock)
            self.sock.close()
        await anyio.lowlevel.checkpoint()

    def _check_open(self) -> None:
        if self._closed:
            raise anyio.ClosedResourceError


def _fds_of(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return list(fds)


async def accept(listener: socket.socket) -> UnixStream:
    """The next connection on a nonblocking listening unix socket."""
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            await anyio.wait_readable(listener)
            continue
        return UnixStream(conn)


def listen(path: str, backlog: int = 64) -> socket.socket:
    """A nonblocking unix listening socket at ``path`` (which must not exist)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        with contextlib.suppress(OSError):
            sock.close()
        raise
    return sock
