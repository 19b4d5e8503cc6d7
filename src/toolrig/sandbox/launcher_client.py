"""toolrig's side of the launcher (``toolrig.sandbox.launcher``): start it, send it requests (part of ``process``)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from toolrig.sandbox.launcher import INLINE_REQUEST
from toolrig.sandbox.pids import PidsCgroup


def _ended(pidfd: int, within: float = 0.0) -> bool:
    """Whether the process a pidfd refers to has ended (readable), waiting up to ``within`` seconds.

    ``poll``, not ``select``: a process with many descriptors open (a server, a long test run) gets pidfds above
    ``FD_SETSIZE`` (1024), which ``select`` refuses, and every command then failed as ``internal``.
    """
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(math.ceil(within * 1000)))


class Launcher:
    """The process that starts every command (``toolrig.sandbox.launcher``), one per toolrig process.

    It is shared by every session: it holds no session state, only a socket to the launcher.
    """

    _lock = threading.Lock()
    _current: Launcher | None = None

    def __init__(self, base: Path | None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        script = Path(__file__).with_name("launcher.py")
        env = {"LC_ALL": "C.UTF-8"}  # nothing of toolrig's environment: commands may read their ancestors'
        argv = [sys.executable, "-I", "-S", str(script), str(theirs.fileno()), str(base or ""), str(os.getpid())]
        with theirs:
            starter = subprocess.Popen(  # noqa: S603 - our own interpreter and script
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                pass_fds=(theirs.fileno(),),
                close_fds=True,
            )
            starter.wait()  # it double-forks: the launcher's parent is not toolrig
        said = b""
        if starter.stdout is not None:
            with starter.stdout:
                said = starter.stdout.read(64)  # the launcher's pid, then it closes its stdout
        self.pidfd: int | None = None
        self.pid: int | None = None  # names its keepers' cgroups (``PidsCgroup.forget_spares``)
        with contextlib.suppress(ValueError, OSError):
            self.pid = int(said)
            self.pidfd = os.pidfd_open(self.pid)
        self.sock = ours
        self.owner = os.getpid()
        self.base = base

    def gone(self, within: float = 0.0) -> bool:
        """Whether the launcher process has ended (a command may kill it); ``within``: wait that long for it.

        A launcher that stops closes its socket first, then cleans up (its keepers' cgroups) and exits: a request
        lost with it is seen lost (its status socket closed unread) a moment before the process has ended.
        """
        return self.pidfd is None or _ended(self.pidfd, within)

    def close(self) -> None:
        self.sock.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def kill(self) -> None:
        """End a launcher that takes no request (a command may have stopped it): the next command starts another."""
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    @classmethod
    def get(cls) -> Launcher:
        base = PidsCgroup.base()
        with cls._lock:
            current = cls._current
            if current is None or current.owner != os.getpid() or current.base != base or current.gone():
                if current is not None:  # ours: its keepers see the end and it exits; inherited: the parent's
                    current.close()
                    PidsCgroup.forget_spares(current.pid)
                current = cls._current = cls(base)
            return current

    @classmethod
    def forget(cls, launcher: Launcher) -> None:
        """Start a new launcher for the next command: this one died."""
        with cls._lock:
            if cls._current is launcher:
                cls._current = None
        launcher.close()
        PidsCgroup.forget_spares(launcher.pid)

    @classmethod
    def send(cls, request: dict[str, object], fds: list[int]) -> Launcher:
        """Hand the request to a keeper of the current launcher (started again once if it died); returns it."""
        data = json.dumps(request).encode()
        big = -1
        if len(data) > INLINE_REQUEST:
            big = os.memfd_create("toolrig-request", os.MFD_CLOEXEC)
            os.write(big, data)
            data = json.dumps({"memfd": len(data)}).encode()
            fds = [*fds, big]
        try:
            for attempt in range(2):
                launcher = cls.get()
                try:
                    socket.send_fds(launcher.sock, [data], fds)
                    return launcher
                except OSError:  # the launcher died (a command may kill it): start another once
                    cls.forget(launcher)
                    if attempt:
                        raise
            raise AssertionError("unreachable")
        finally:
            if big >= 0:
                os.close(big)
