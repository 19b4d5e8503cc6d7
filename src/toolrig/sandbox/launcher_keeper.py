"""A keeper: the launcher's process that takes a request, starts the command and ends all it started.

Part of the launcher (``launcher.py``, whose docstring gives the protocol); standard library only.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket

if __package__:  # imported by toolrig (its constants, tests)
    from toolrig.sandbox.launcher_board import _BACK, _IDLE, Board
    from toolrig.sandbox.launcher_procs import (
        _HIGH_FD,
        PR_SET_PDEATHSIG,
        Attributes,
        _high,
        _prctl,
        _read,
        _reap_all,
        _reaped,
        _subreaper,
        _write,
        descendants,
        kill_all_below,
        own_oom_score,
        restore,
    )  # fmt: skip
else:  # run as the launcher script: its siblings are top-level modules
    from launcher_board import _BACK, _IDLE, Board  # type: ignore[import-not-found,no-redef]
    from launcher_procs import (  # type: ignore[import-not-found,no-redef]
        _HIGH_FD,
        PR_SET_PDEATHSIG,
        Attributes,
        _high,
        _prctl,
        _read,
        _reap_all,
        _reaped,
        _subreaper,
        _write,
        descendants,
        kill_all_below,
        own_oom_score,
        restore,
    )  # fmt: skip

_CWD_FD = 3
_PRELUDE_FD = 4
EXTRA_FD = _EXTRA_FD = 5  # the first number ``extra_fds`` are given in the command (5, 6, ...)
_COUNT_INTERVAL = 0.02
INLINE_REQUEST = 64 * 1024  # a larger request comes in a memfd (a small receive buffer is a cheap one)


class _Keeper:
    """One keeper process: its cgroup, how it talks to the launcher, and whether it stays for the next command."""

    def __init__(
        self,
        control: int,
        prelude_fd: int,
        cgroup: str | None,
        launcher: int,
        stays: bool,
        board: Board,
        slot: int,
        pristine: Attributes,
    ) -> None:
        self.control = control
        self.pristine = pristine  # the launcher's attributes when it started, before any command ran
        self.oom_fd = -1  # its own oom_score_adj, opened once it runs
        self.board = board
        self.slot = slot
        self.prelude_fd = prelude_fd
        self.cgroup = cgroup
        self.launcher = launcher
        self.stays = stays
        self.pids_max: str | None = None  # what this keeper last wrote to its cgroup's pids.max
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    def take(self) -> bool:
        """Mark this keeper busy; whether another keeper is still idle (if not, the launcher must fork one)."""
        return self.board.take(self.slot)

    def coming_back(self) -> None:
        """Marked before toolrig hears the command is over, so that its next request does not fork a keeper.

        Taken by another keeper, the request must not find this one busy and wake the launcher for a keeper nobody
        needs (CI saw it: this keeper was still cleaning up after its command when toolrig's next request arrived,
        and the launcher forked a keeper for one command).
        """
        if self.stays and not self.orphaned():
            self.board.mark(self.slot, _BACK)

    def idle_again(self) -> None:
        self.board.mark(self.slot, _IDLE)

    def say(self, kind: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self.control, f"{kind} {os.getpid()}\n".encode())

    def set_pids_max(self, value: str) -> None:
        """The command's process limit, before it starts; unchanged from the last command's, it is in place already.

        A command may write its own cgroup's limit: ``restore_pids_max`` puts the keeper's value back once the
        command and everything it started are gone, off the next command's path.
        """
        if self.cgroup is not None and value != self.pids_max:
            self.pids_max = None
            _write(f"{self.cgroup}/pids.max", value)
            self.pids_max = value

    def restore_pids_max(self) -> None:
        if self.cgroup is not None and self.pids_max is not None:
            value, self.pids_max = self.pids_max, None
            with contextlib.suppress(OSError):
                _write(f"{self.cgroup}/pids.max", value)
                self.pids_max = value

    def orphaned(self) -> bool:
        """Whether the launcher is gone: then this keeper ends after its command instead of staying."""
        return os.getppid() != self.launcher

    def leave(self) -> None:
        """Take this keeper's cgroup with it as it ends for good: with its launcher gone, nobody else removes it.

        A cgroup can be removed only once empty, so the keeper moves itself to the parent cgroup first (a slow
        migration, but only on this way out).
        """
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is None:
            return
        for pid in self.strays_of(cgroup):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            _write(f"{os.path.dirname(cgroup)}/cgroup.procs", str(os.getpid()))
            os.rmdir(cgroup)

    def strays(self) -> list[int] | None:
        """Processes in this keeper's cgroup other than itself (none, unless a command escaped it).

        None if the keeper itself is no longer in it: root may move it out, and its next commands would run with no
        process limit.
        """
        if self.cgroup is None:
            return []
        try:
            pids = list(map(int, _read(f"{self.cgroup}/cgroup.procs").split()))
        except (OSError, ValueError):
            return []
        me = os.getpid()
        return [pid for pid in pids if pid != me] if me in pids else None

    @staticmethod
    def strays_of(cgroup: str) -> list[int]:
        try:
            return [pid for pid in map(int, _read(f"{cgroup}/cgroup.procs").split()) if pid != os.getpid()]
        except (OSError, ValueError):
            return []


def keep(sock: socket.socket, keeper: _Keeper) -> None:
    """A keeper: join its cgroup once, then take requests off the socket and keep each command. Never returns.

    A keeper that stays goes back to the socket after each command, in the same cgroup: no fork and no cgroup
    migration per command. One that does not (forked while the others were busy) ends after its command.
    """
    me = os.getpid()
    try:
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)  # the launcher's handler is not ours
        signal.set_wakeup_fd(keeper.wake_w, warn_on_full_buffer=False)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        keeper.prelude_fd = _high(keeper.prelude_fd)  # clear of the numbers the command's descriptors go to
        # Hold every free number below _HIGH_FD (close-on-exec): the descriptors of each request then arrive above
        # them, clear of the numbers posix_spawn dup2s onto, with no per-command moving.
        while (spare := os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)) < _HIGH_FD:
            pass
        os.close(spare)
        _subreaper()
        if keeper.cgroup is not None:
            try:
                with open(f"{keeper.cgroup}/cgroup.procs", "w") as handle:
                    handle.write(str(me))
            except OSError:
                keeper.cgroup = None
        keeper.oom_fd = own_oom_score()
        if not restore(keeper.pristine, keeper.oom_fd):  # the launcher was changed by a command, for good
            os._exit(1)
    except BaseException:  # a keeper that cannot start just ends; the launcher forks another
        os._exit(1)
    while True:
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # idle, it must not outlive the launcher
            if keeper.orphaned():
                keeper.leave()
                os._exit(0)
            taken = _read_request(sock)
            if taken is None:
                keeper.say("E")
                os._exit(0)
            _prctl(PR_SET_PDEATHSIG, 0)  # from here on it keeps a command: it outlives the launcher if need be
        except BaseException:
            os._exit(1)
        request, received = taken
        others_idle = keeper.take()
        fds = [fd if fd >= _HIGH_FD else _high(fd) for fd in received]  # clear of what posix_spawn dup2s onto
        status = fds[2]
        try:
            _keep(request, fds, keeper, others_idle)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.write(status, f"E {exc}\n".encode(errors="replace"))
            if not others_idle:
                keeper.say("T")
        _close_all_but_status(fds)  # the status socket last: toolrig reads its closing as the end of the command
        if fds[2] >= 0:
            with contextlib.suppress(OSError):
                os.close(fds[2])
        if not keeper.stays:
            os._exit(0)
        strays = keeper.strays()
        for pid in strays or ():  # nothing of the last command may meet the next one
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        keeper.restore_pids_max()
        if strays is None or not restore(
            keeper.pristine, keeper.oom_fd
        ):  # moved out of its cgroup, or changed for good
            os._exit(0)  # busy on the board: the launcher forks another and removes this one's cgroup
        keeper.idle_again()


def _keep(request: dict[str, object], fds: list[int], keeper: _Keeper, others_idle: bool) -> None:
    """Start one command, wait for it and end everything it started; the status socket says how it went."""
    status, start = fds[2:4]
    extra = request.get("extra_fds")
    count = extra if isinstance(extra, int) and 0 < extra <= len(fds) - 4 else 0
    own = len(fds) - count  # out, err, status, start, then the final-directory pipe and stdin where given
    stdin_fd = fds[own - 1] if request.get("stdin") is True and own > 4 else -1
    cwd_fd = fds[4] if own - (stdin_fd >= 0) > 4 else -1
    os.set_blocking(status, False)
    _reaped.clear()
    me = os.getpid()
    limit = request.get("count_limit")
    pids_max = request.get("pids_max")
    if isinstance(pids_max, int) and keeper.cgroup is None:
        limit = pids_max - 1  # no cgroup could be made for this keeper: count instead
    keeper.set_pids_max(str(pids_max) if isinstance(pids_max, int) else "max")
    os.fchdir(start)
    leader = _spawn(request, fds, count, (cwd_fd, stdin_fd), keeper)
    # The keeper holds its copies of the output pipes until the command is over, and closes them only after its
    # status socket: the pipes reach their end after toolrig heard X, so toolrig wakes once, at the status socket's
    # closing, not once more for each pipe (on two CPUs it woke for the pipes' ends before X was written). After X
    # nothing of the command is left to write: toolrig reads what the pipes hold without waiting for their end.
    with contextlib.suppress(OSError):  # toolrig may be gone
        os.write(status, f"P {leader} {me} {keeper.cgroup or '-'}\n".encode())
    # Only now may a new keeper join its cgroup: a cgroup migration holds up forks machine-wide while the kernel
    # waits for an RCU grace period, and this command's spawn must not wait on it. Only if no other keeper is idle.
    if not others_idle:
        keeper.say("T")

    def tell(line: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(status, line)

    interval = _COUNT_INTERVAL if isinstance(limit, int) else None
    watched = [keeper.wake_r, status]
    running = True
    exit_code = 0
    while running:
        ready, _, _ = select.select(watched, [], [], interval)
        if keeper.wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(keeper.wake_r, 4096)
        if status in ready:  # toolrig asks: T to end the command, K to kill all; closed: toolrig is gone
            try:
                asked = os.read(status, 64)
            except BlockingIOError:
                asked = b"-"
            except OSError:
                asked = b""
            if b"K" in asked or not asked:
                watched.remove(status)
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGKILL)
                kill_all_below(me)
            elif b"T" in asked:
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGTERM)
        if isinstance(limit, int) and len(descendants(me)) > limit:
            tell(b"L\n")
            with contextlib.suppress(OSError):
                os.killpg(leader, signal.SIGKILL)
            kill_all_below(me)
        for pid, code in _reap_all():
            if pid == leader and running:
                running = False
                exit_code = os.waitstatus_to_exitcode(code)
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGKILL)  # the group is gone once its last member is reaped
    kill_all_below(me)
    if stdin_fd >= 0:  # nothing reads it now: closed before X, so none of it is held once the command is over
        with contextlib.suppress(OSError):
            os.close(stdin_fd)
        fds[fds.index(stdin_fd)] = -1
    if keeper.orphaned():  # it will not stay: its cgroup goes before toolrig hears the command is over
        keeper.leave()
    keeper.coming_back()
    tell(f"X {exit_code}\n".encode())
    os.close(status)
    fds[2] = -1
    _close_all_but_status(fds)


def _spawn(request: dict[str, object], fds: list[int], count: int, own: tuple[int, int], keeper: _Keeper) -> int:
    """Start the command (in its own session, with its descriptors in place); its pid.

    ``own``: the final-directory pipe and the command's stdin (a background command's pipe), -1 where not given:
    stdin is /dev/null then.

    Never for a request toolrig gave up on (nothing took it in time, or it was cancelled): ``OSError`` then.
    """
    out, err = fds[:2]
    cwd_fd, stdin_fd = own
    env = dict(request["env"])  # type: ignore[call-overload]
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_DUP2, stdin_fd, 0) if stdin_fd >= 0 else (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
    ]
    if request.get("prelude"):
        actions.append((os.POSIX_SPAWN_DUP2, keeper.prelude_fd, _PRELUDE_FD))
        env["BASH_ENV"] = f"/dev/fd/{_PRELUDE_FD}"
        if cwd_fd >= 0:
            actions.append((os.POSIX_SPAWN_DUP2, cwd_fd, _CWD_FD))
            env["__TOOLRIG_CWD_FD"] = str(_CWD_FD)
    for number, fd in enumerate(fds[len(fds) - count :] if count else (), _EXTRA_FD):
        actions.append((os.POSIX_SPAWN_DUP2, fd, number))  # the sandbox's own (a session's namespaces)
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    if _caller_gone(fds[2]):  # a request toolrig gave up on (nothing took it in time, or it was cancelled) never runs
        raise OSError("toolrig no longer waits for this command")
    return os.posix_spawnp(
        argv[0],
        argv,
        env,
        file_actions=actions,
        setsid=True,
        setsigmask=(),
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGINT),
    )


def _caller_gone(status: int) -> bool:
    """Whether toolrig closed its end of the command's status socket (one poll, no wait)."""
    poller = select.poll()
    poller.register(status, select.POLLRDHUP)
    return bool(poller.poll(0))


def _close_all_but_status(fds: list[int]) -> None:
    for index, fd in enumerate(fds):
        if index != 2 and fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            fds[index] = -1


def _recv_fds(sock: socket.socket, size: int, most: int) -> tuple[bytes, list[int]]:
    """One message and its descriptors, close-on-exec as they arrive (``socket.recv_fds`` drops its flags in 3.11)."""
    fds = array.array("i")
    data, ancillary, _flags, _addr = sock.recvmsg(size, socket.CMSG_LEN(most * fds.itemsize), socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _read_request(sock: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """The next well-formed request and its descriptors, or None once toolrig's end is closed."""
    while True:
        try:
            # At most 10 come (out, err, status, start, final directory, stdin, three extra, a memfd): room for 12.
            data, fds = _recv_fds(sock, INLINE_REQUEST + 1024, 12)
        except OSError:
            return None
        if not data:
            return None
        try:
            request = json.loads(data)
            if "memfd" in request:  # a large request comes in a memfd, passed last
                big = fds.pop()
                try:
                    request = json.loads(os.pread(big, int(request["memfd"]), 0))
                finally:
                    os.close(big)
            if not isinstance(request, dict) or len(fds) < 4:
                raise ValueError("not a request")
        except (ValueError, IndexError, TypeError, OSError):
            for received in fds:
                os.close(received)
            continue
        return request, fds
