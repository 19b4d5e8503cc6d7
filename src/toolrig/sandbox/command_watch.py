"""What toolrig hears from a running command: its keeper's status socket and its output pipes, read by one waiter.

Part of ``toolrig.sandbox.process`` (which starts commands through the launcher); the trust model is its: the
command is hostile, and so is everything it writes, bounded here by the output limit.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable

import anyio

from toolrig.sandbox.capped import CappedText
from toolrig.sandbox.launcher_client import _ended
from toolrig.sandbox.pids import PidsCgroup, _command_cgroup

_READ_SIZE = 65536


class Keeper:
    """The launcher's process that started the command and ends everything it started (then keeps the next).

    Its status pipe says when the command started, why it was stopped and when its leader exited; the pipe
    closes once every process of the command is gone. Requests to stop go back on the same (per-command) socket;
    only an unanswering keeper gets a signal (SIGKILL, through a pidfd: no pid reuse).
    """

    def __init__(self, status_fd: int) -> None:
        self.fd = status_fd  # a socket: the keeper reports on it, and reads T (end the command) or K (kill all)
        os.set_blocking(status_fd, False)
        self._buffer = b""
        self.closed = False
        self.leader = 0
        self.pid = 0
        self.pidfd: int | None = None
        self.cgroup: PidsCgroup | None = None  # the command's, made by the keeper: emptied and removed by us
        self.cgroup_removed = False
        self.exit_code: int | None = None
        self.exited_flag = False
        self.over_limit = False
        self.error: str | None = None

    def read_ready(self) -> bool:
        """Read what the keeper wrote (without waiting); parse every complete line. False once it closed."""
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                return not self.closed
            except OSError:  # reset: the keeper was killed with our T or K unread
                chunk = b""
            if not chunk:
                self.closed = True
                self.exited_flag = True
                return False
            self._parse(chunk)

    def _parse(self, chunk: bytes) -> None:
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            kind, _, rest = line.decode(errors="replace").partition(" ")
            if kind == "P":
                leader, keeper, cgroup = rest.split(" ", 2)
                self.leader, self.pid = int(leader), int(keeper)
                self.cgroup = _command_cgroup(cgroup, os.getpid())
            elif kind == "X":
                self.exit_code = int(rest)
                self.exited_flag = True
            elif kind == "L":
                self.over_limit = True
            elif kind == "E":
                self.error = rest
                self.exited_flag = True
        # The pidfd serves only to kill or watch a keeper that has not said X (it stays for the next command once
        # it has): the end usually arrives with the start line, and then no pidfd is opened.
        if self.pid and self.pidfd is None and self.exit_code is None and not self.closed:
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(self.pid)

    def has_started(self) -> bool:
        return bool(self.pid) or self.closed or self.error is not None

    def finished(self) -> bool:
        """Whether the keeper is done with the command: it closed its end, or said every process of it is gone.

        ``X`` is written only once the leader was reaped and nothing the command started is left, so it is
        enough: waiting for the close as well cost one more wake-up per command.
        """
        return self.closed or self.exit_code is not None

    def signal(self, sig: signal.Signals) -> None:
        """SIGTERM ends the command, SIGUSR1 kills all it started, SIGKILL ends the keeper itself.

        The first two are asked on the command's own pipe, not sent as signals: the keeper lives on for the
        next command, and a request that arrives late must not reach that one.
        """
        if self.closed:
            return
        if sig == signal.SIGKILL:
            if self.pidfd is None:
                self.read_ready()  # its P line (who it is) is read only with the end, unless asked for
            if self.pidfd is not None:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(self.pidfd, sig)
            return
        with contextlib.suppress(OSError):
            os.write(self.fd, b"K" if sig == signal.SIGUSR1 else b"T")

    def abandon(self) -> None:
        """Give up on a request nothing took: there is nothing to stop.

        Once our end is closed no keeper that takes it later starts it (the keeper looks for that before it spawns).
        """
        self.closed = True
        self.exited_flag = True

    def dead(self) -> bool:
        """Whether the keeper process itself has ended (killed, stopped and killed, or done for good)."""
        return self.pidfd is None or _ended(self.pidfd)

    def close(self) -> None:
        os.close(self.fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class Watch:
    """Everything a running command can say, read by one waiter: the keeper's status socket and both output pipes.

    Why one: a task per pipe plus one for the status cost a task group, three tasks and a wake-up each per
    command; one epoll set over the three descriptors is a single readable descriptor for the event loop, so a
    command that writes nothing costs one wake-up, when it ends. Progress is reported
    from the same wait (``on_progress`` every ``interval`` seconds), as long as anything waits on the command.
    """

    def __init__(
        self,
        keeper: Keeper,
        out: tuple[int, CappedText],
        err: tuple[int, CappedText],
        max_output_bytes: int,
        on_progress: Callable[[float, str], None] | None,
        interval: float,
        started: float,
    ) -> None:
        self.keeper = keeper
        self.out = out[1]
        self.err = err[1]
        self.streams = dict((out, err))  # the pipes still open for reading
        self.max_output_bytes = max_output_bytes
        self.stopped: str | None = None
        self.on_progress = on_progress
        self.interval = interval
        self.started = started
        self.next_tick = started + interval
        self.poller = select.epoll()
        # The keeper's lines (P when the command starts, X at its end) do not wake us: its closing the socket, right
        # after X, does. The start costs no wake-up of toolrig; the end one, for the status and both pipes.
        self.poller.register(keeper.fd, select.EPOLLRDHUP)
        for fd in self.streams:
            os.set_blocking(fd, False)
            self.poller.register(fd, select.EPOLLIN)

    def close(self) -> None:
        self.poller.close()

    def hear_every_line(self, every: bool) -> None:
        """Wake for each line of the keeper (waiting for a start), or only for its closing (the rest of the time)."""
        if not self.keeper.closed:
            self.poller.modify(self.keeper.fd, select.EPOLLRDHUP | (select.EPOLLIN if every else 0))

    def _take(self) -> None:
        """Handle every descriptor that is ready now, without waiting."""
        for fd, _events in self.poller.poll(0):
            if fd == self.keeper.fd:
                if not self.keeper.read_ready():
                    self.poller.unregister(fd)
            elif fd in self.streams:
                self._pump(fd, self.streams[fd])

    def drain(self) -> None:
        """Read what the pipes hold now, without waiting for their end (the keeper closes its copies after ``X``).

        Only once the keeper said ``X``: no process of the command is left to write. Bounded all the same (a process
        outside the command could have opened a pipe through ``/proc`` and go on writing): by the output limit.
        """
        for fd, sink in list(self.streams.items()):
            while sink.bytes_seen <= self.max_output_bytes and self._pump(fd, sink):
                pass

    def _pump(self, fd: int, sink: CappedText) -> bool:
        """Read once from a ready pipe; whether it may hold more (False at its end, or when nothing is there now)."""
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.poller.unregister(fd)
            del self.streams[fd]
            return False
        sink.feed(chunk)
        if sink.bytes_seen > self.max_output_bytes and self.stopped is None:
            self.stopped = f"output limit ({self.max_output_bytes:,} bytes on one stream)"
            self.keeper.signal(signal.SIGUSR1)
        return True

    async def until(self, done: Callable[[], bool]) -> None:
        """Read and parse whatever arrives until ``done()``; cancel the caller's scope to stop sooner."""
        while True:
            self._take()
            if done():
                return
            if self.on_progress is None:
                await anyio.wait_readable(self.poller.fileno())
                continue
            with anyio.move_on_after(self.next_tick - time.perf_counter()):
                await anyio.wait_readable(self.poller.fileno())
            now = time.perf_counter()
            if now >= self.next_tick:
                self.next_tick = now + self.interval
                written = self.out.bytes_seen + self.err.bytes_seen
                elapsed = now - self.started
                self.on_progress(elapsed, f"running for {elapsed:.0f} s; {written:,} bytes of output so far")
