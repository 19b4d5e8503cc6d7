"""A session's network namespace: held open by one small process, joined by each command of the session.

Trust model: commands that join are hostile; the namespace they share has only loopback, so what one command
serves there (a dev server) the next reaches, and nothing else: the way out is the egress proxy, through
listening sockets the holder makes per command and toolrig serves (``Egress.adopt``). The holder
(``egress_bridge.py hold``) runs under bubblewrap in its own pid namespace with an empty environment, so a
command sees neither it nor toolrig; it holds no authority (it makes sockets that lead to the proxy only).

Interface (for the sandbox; one per session and network view, closed with the session; ``command_net.joined``
wraps the per-command part)::

    async with open_session_network() as net:
        port = await net.serve(egress)          # per command: listeners in the namespace, adopted by egress
        argv = net.join_prefix(3, 4) + bwrap_argv_without_unshare_net
        # spawn argv with net.net_fd as fd 3 (and net.user_fd, when not None, as fd 4)

As root the namespace belongs to the initial user namespace and joining needs ``nsenter --net``. Unprivileged,
bubblewrap makes the namespace inside a user namespace of its own (the *owner*, the parent of the holder's);
joining enters that owner first, where the joiner is uid 0: the sandbox's bubblewrap must then make a user
namespace of its own again (``--unshare-user --uid UID --gid GID``) so the command runs as the user, with no
capabilities over the shared namespace.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc

from toolrig.sandbox.egress import Egress

BRIDGE = str(Path(__file__).with_name("egress_bridge.py"))
NS_GET_USERNS = 0xB701  # ioctl on a namespace file: the user namespace that owns it
_START_SECONDS = 10.0


@dataclass
class SessionNetwork:
    """A live namespace: ``net_fd`` names it, ``user_fd`` its owning user namespace when that is not ours."""

    net_fd: int
    user_fd: int | None
    control: socket.socket = field(repr=False)
    _lock: anyio.Lock = field(default_factory=anyio.Lock, repr=False)

    async def listeners(self) -> list[socket.socket]:
        """Fresh listening sockets on 127.0.0.1 and ::1 (one port) inside the namespace."""
        async with self._lock:
            await _send(self.control, b"L")
            message, fds = await _receive(self.control, 2)
        sockets = [socket.socket(fileno=fd) for fd in fds]
        if not message.startswith(b"P ") or not sockets:
            for sock in sockets:
                sock.close()
            raise OSError(f"the namespace holder could not make listeners: {message.decode(errors='replace')}")
        return sockets

    async def serve(self, egress: Egress) -> int:
        """Listeners for one command, served by its proxy; the port goes into ``egress_bridge.proxy_env``."""
        sockets = await self.listeners()
        port = int(sockets[0].getsockname()[1])
        for sock in sockets:
            egress.adopt(sock)
        return port

    def pass_fds(self) -> tuple[int, ...]:
        return (self.net_fd,) if self.user_fd is None else (self.net_fd, self.user_fd)

    def join_prefix(self, net_fd: int | None = None, user_fd: int | None = None) -> list[str]:
        """``nsenter`` arguments that put what follows into the namespace, given the child's fd numbers."""
        net = self.net_fd if net_fd is None else net_fd
        argv = ["nsenter", f"--net=/proc/self/fd/{net}"]
        if self.user_fd is not None:
            user = self.user_fd if user_fd is None else user_fd
            argv[1:1] = [f"--user=/proc/self/fd/{user}", "--preserve-credentials"]
        return [*argv, "--"]


def holder_argv(control_fd: int, *, bwrap: str = "bwrap", python: str = sys.executable) -> list[str]:
    """The holder's command line: bubblewrap makes the namespace (and brings its loopback up)."""
    return [
        bwrap,
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--",
        python,
        "-I",
        "-S",
        BRIDGE,
        "hold",
        str(control_fd),
    ]


@contextlib.asynccontextmanager
async def open_session_network(
    *, bwrap: str = "bwrap", python: str = sys.executable, prefix: tuple[str, ...] = ()
) -> AsyncIterator[SessionNetwork]:
    """Start a holder and yield its namespace; the holder ends (and the namespace with its last member) after.

    ``prefix`` goes before bubblewrap on the holder's command line (tests: ``setpriv`` to an unprivileged user).
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = {"PATH": os.defpath}
    try:
        process = await anyio.open_process(
            [*prefix, *holder_argv(theirs.fileno(), bwrap=shutil.which(bwrap) or bwrap, python=python)],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    finally:
        theirs.close()
    ours.setblocking(False)
    net_fd: int | None = None
    user_fd: int | None = None
    try:
        async with process:
            try:
                net_fd = await _first_message(ours, process)
                user_fd = owner_if_foreign(net_fd)
                yield SessionNetwork(net_fd, user_fd, ours)
            finally:
                ours.close()  # the holder reads EOF and exits
                with anyio.CancelScope(shield=True), anyio.move_on_after(_START_SECONDS):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
    finally:
        ours.close()
        for fd in (net_fd, user_fd):
            if fd is not None:
                os.close(fd)


async def _first_message(control: socket.socket, process: anyio.abc.Process) -> int:
    error = ""
    with anyio.move_on_after(_START_SECONDS):
        message, fds = await _receive(control, 1)
        if message == b"N" and len(fds) == 1:
            return fds[0]
        for fd in fds:
            os.close(fd)
    if process.stderr is not None:
        with anyio.move_on_after(1):
            error = (await process.stderr.receive()).decode(errors="replace").strip()
    raise OSError(f"the network namespace holder did not start: {error or 'no answer'}")


def owner_if_foreign(net_fd: int) -> int | None:
    """The user namespace owning ``net_fd`` when it is not ours (unprivileged), else None."""
    owner = fcntl.ioctl(net_fd, NS_GET_USERNS)
    if os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(owner)
        return None
    return owner


async def _send(sock: socket.socket, data: bytes) -> None:
    while True:
        try:
            sock.send(data)
            return
        except BlockingIOError:
            await anyio.wait_writable(sock)


async def _receive(sock: socket.socket, max_fds: int) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(256, socket.CMSG_SPACE(max_fds * fds.itemsize))
            break
        except BlockingIOError:
            await anyio.wait_readable(sock)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)
