"""A session's network namespace: held open by one small process, joined by each command of the session.

Trust model: commands that join are hostile; the namespace they share has only loopback, so what one command
serves there (a dev server) the next reaches, and nothing else: the way out is the egress proxy, through
listening sockets the holder makes per command and that command's own proxy serves (``Egress.adopt``). The
holder (``egress_bridge.py hold``) runs under bubblewrap in its own pid namespace with an empty environment, so a
command sees neither it nor toolrig; it holds no authority (it makes sockets that lead to a proxy only).

Independent of any event loop and thread: the holder is a plain child process, its control socket is used with
blocking calls under a lock (one round trip per command, microseconds), and it ends when toolrig closes the
control socket or dies (the socket's end closes with the process), never with the thread or loop that started it
(``call_sync`` runs each call in an event loop of its own; a worker thread that started it may exit).

Interface (``toolrig.sandbox.session.SessionSandbox`` holds one per session; ``command_net.joined`` wraps the
per-command part)::

    net = SessionNetwork.start()                # ~14 ms: bubblewrap makes the namespace, the holder answers
    port = net.serve(egress)                    # per command: listeners in the namespace, adopted by its proxy
    argv = net.join_prefix(6, 7) + bwrap_argv_without_unshare_net
    # spawn argv with net.net_fd as fd 6 (and net.user_fd, when not None, as fd 7)
    net.close()                                 # the holder exits; the namespace ends with its last member

As root the namespace belongs to the initial user namespace and joining needs ``nsenter --net``. Unprivileged,
bubblewrap makes the namespace inside a user namespace of its own (the *owner*, the parent of the holder's);
joining enters that owner first, with all capabilities there: the sandbox's bubblewrap must then make a user
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
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from toolrig.sandbox.egress import Egress

BRIDGE = str(Path(__file__).with_name("egress_bridge.py"))
NS_GET_USERNS = 0xB701  # ioctl on a namespace file: the user namespace that owns it
_START_SECONDS = 10.0
_ANSWER_SECONDS = 5.0


class SessionNetwork:
    """A live namespace: ``net_fd`` names it, ``user_fd`` its owning user namespace when that is not ours."""

    def __init__(self, process: subprocess.Popen[bytes], control: socket.socket, net_fd: int) -> None:
        self.process = process
        self.control = control
        self.net_fd = net_fd
        self.user_fd = owner_if_foreign(net_fd)
        self._lock = threading.Lock()
        self._closed = False
        self._broken = False  # a round trip failed: the holder's answers can no longer be matched to requests

    @classmethod
    def start(
        cls, *, bwrap: str = "bwrap", python: str = sys.executable, prefix: tuple[str, ...] = ()
    ) -> SessionNetwork:
        """Start a holder and wait for its namespace (blocking, ~14 ms); OSError when it cannot start.

        ``prefix`` goes before bubblewrap on the holder's command line (tests: ``setpriv`` to an unprivileged user).
        """
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = subprocess.Popen(  # noqa: S603 - bubblewrap found on PATH, fixed arguments
                [*prefix, *holder_argv(theirs.fileno(), bwrap=shutil.which(bwrap) or bwrap, python=python)],
                pass_fds=(theirs.fileno(),),
                env={"PATH": os.defpath},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        try:
            ours.settimeout(_START_SECONDS)
            message, fds = _receive(ours, 1)
        except OSError:
            message, fds = b"", []
        if message == b"N" and len(fds) == 1:
            if process.stderr is not None:
                process.stderr.close()
            ours.settimeout(_ANSWER_SECONDS)
            return cls(process, ours, fds[0])
        for fd in fds:
            os.close(fd)
        ours.close()
        error = _ended(process)
        raise OSError(f"the network namespace holder did not start: {error or 'no answer'}")

    def alive(self) -> bool:
        return not self._closed and not self._broken and self.process.poll() is None

    def listeners(self) -> list[socket.socket]:
        """Fresh listening sockets on 127.0.0.1 and ::1 (one port) inside the namespace (one round trip)."""
        with self._lock:
            if self._closed or self._broken:
                raise OSError("the session's network namespace is closed")
            try:
                self.control.send(b"L")
                message, fds = _receive(self.control, 2)
            except OSError:
                self._broken = True
                raise
        sockets = [socket.socket(fileno=fd) for fd in fds]
        if not message.startswith(b"P ") or not sockets:
            for sock in sockets:
                sock.close()
            raise OSError(f"the namespace holder could not make listeners: {message.decode(errors='replace')}")
        return sockets

    def serve(self, egress: Egress) -> int:
        """Listeners for one command, served by its own proxy; the port goes into ``egress_bridge.proxy_env``."""
        sockets = self.listeners()
        port = int(sockets[0].getsockname()[1])
        try:
            for sock in sockets:
                egress.adopt(sock)
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return port

    def pass_fds(self) -> tuple[int, ...]:
        return (self.net_fd,) if self.user_fd is None else (self.net_fd, self.user_fd)

    def join_prefix(self, net_fd: int | None = None, user_fd: int | None = None) -> list[str]:
        """``nsenter`` arguments that put what follows into the namespace, given the child's fd numbers."""
        net = self.net_fd if net_fd is None else net_fd
        argv = [shutil.which("nsenter") or "nsenter", f"--net=/proc/self/fd/{net}"]
        if self.user_fd is not None:
            user = self.user_fd if user_fd is None else user_fd
            argv[1:1] = [f"--user=/proc/self/fd/{user}", "--preserve-credentials"]
        return [*argv, "--"]

    def close(self) -> None:
        """End the holder (it reads EOF and exits) and forget the namespace; idempotent, from any thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.control.close()
            for fd in (self.net_fd, self.user_fd):
                if fd is not None:
                    os.close(fd)
        try:
            self.process.wait(_ANSWER_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(_ANSWER_SECONDS)


def holder_argv(control_fd: int, *, bwrap: str = "bwrap", python: str = sys.executable) -> list[str]:
    """The holder's command line: bubblewrap makes the namespace (and brings its loopback up).

    No ``--die-with-parent``: that follows the *thread* that started it, and a session outlives threads. The
    holder ends when the control socket's other end closes (toolrig closed it, or died).
    """
    return [
        bwrap,
        "--unshare-net",
        "--unshare-pid",
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
    """``SessionNetwork.start`` in a worker thread, closed after the block (tests, benchmarks)."""
    net = await anyio.to_thread.run_sync(lambda: SessionNetwork.start(bwrap=bwrap, python=python, prefix=prefix))
    try:
        yield net
    finally:
        await anyio.to_thread.run_sync(net.close)


def _ended(process: subprocess.Popen[bytes]) -> str:
    """What a holder that did not answer said on stderr (it is killed if still running)."""
    try:
        _, error = process.communicate(timeout=1)
    except subprocess.TimeoutExpired:
        process.kill()
        _, error = process.communicate()
    return (error or b"").decode(errors="replace").strip()


def owner_if_foreign(net_fd: int) -> int | None:
    """The user namespace owning ``net_fd`` when it is not ours (unprivileged), else None."""
    owner = fcntl.ioctl(net_fd, NS_GET_USERNS)
    if os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(owner)
        return None
    return owner


def _receive(sock: socket.socket, max_fds: int) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = sock.recvmsg(256, socket.CMSG_SPACE(max_fds * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    for fd in fds:
        os.set_inheritable(fd, False)
    return data, list(fds)
