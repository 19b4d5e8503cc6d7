"""The launcher: a small process that never held toolrig's secrets and starts every command.

Trust model: the commands it starts are hostile and run as the same user as toolrig. A command can read the
environment of each of its ancestors through ``/proc/PID/environ``; so its ancestors are a *keeper* and this
launcher, both started with an empty environment, and the launcher is double-forked away from toolrig (its
parent is init or the nearest subreaper, not toolrig). Every keeper is a child subreaper
(``PR_SET_CHILD_SUBREAPER``): whatever the command starts, ``setsid`` and double forks included, stays below
the keeper, which kills all of it when the command's leader exits, on request, or when the process count
goes over the limit where no pids cgroup counts for us. The launcher is a subreaper too, so a command that
kills its keeper leaves its processes to the launcher, which kills them.

Run as a script with the standard library only (``python -I -S launcher.py FD BASE OWNER``): it imports
nothing of toolrig, so starting it is quick and it carries none of toolrig's state.

Speed: keepers are forked ahead of time and each joins a pids cgroup of its own once (the cgroup-v1
migration waits for an RCU grace period: milliseconds under load). A keeper reads requests straight off the
socket and, once a command and everything it started are gone, goes back for the next one in the same cgroup:
a command costs one hand-off and one ``posix_spawn``, with no fork of Python and no cgroup migration (forking a
Python keeper per command cost ~4 ms of CPU: page tables, copy-on-write faults, unmapping at exit). Up to
``SPARES`` keepers stay; one forked because all were busy keeps one command and ends. An idle keeper dies with
the launcher (``PR_SET_PDEATHSIG``), so a dead launcher never leaves a reader on the socket.

The launcher sleeps through commands: which keepers are idle is kept on a *board* (a shared anonymous mapping, one
byte per keeper, inherited across fork), not told to it. A keeper that takes a request marks itself busy and looks
for another idle one under a lock; only if it finds none does it wake the launcher (``T``) to fork another. A keeper
back from a command marks itself idle without a word (and "coming back", which counts as idle, before toolrig hears
the command ended: the next request may wait the moment it takes to clean up). So back-to-back commands do not wake
the launcher (it was woken twice per command, for "taken" and "idle again"); it still wakes for every keeper's death
(its SIGCHLD) and reads on the board whether the dead keeper was idle, which its death accounting needs. The lock is
only ever tried, never waited for: a command may reach the lock's descriptor through ``/proc/PPID/fd`` (it runs as
our user) and hold it, and a keeper that cannot take it at once wakes the launcher as if none were idle. The board
carries no authority: a command that writes it (it could as well kill the launcher) can only make the launcher fork
a keeper too many or too few, and a request then waits for a keeper that is back from its command.

Protocol, on a SOCK_SEQPACKET socket: one message per command, JSON, with the file descriptors for the
command's stdout, stderr, a status socket, the directory it starts in and (optionally) the final-directory pipe.
Last may come ``extra_fds`` descriptors for the sandbox's wrapper (a session's namespaces), given to the command
as 5, 6, ... The directory comes as a descriptor toolrig opened beneath the workspace without following symlinks: the
keeper
``fchdir``s to it and never walks a path that was checked earlier (a symlink swapped in meanwhile would lead out).
On the status socket the keeper writes ``P <leader> <keeper> <cgroup directory or ->`` once the command started (or
``E <message>`` if it could not start), ``L`` if it killed the command for having too many
processes, and ``X <exit code>`` once the leader ended and every process of the command is gone; then it
closes its end, and only then its copies of the output pipes (toolrig reads them to empty after ``X``, without
waiting for their end: one wake-up per command). toolrig writes ``T`` (SIGTERM the command's group) or ``K``
(kill everything) on the same socket, and closing it kills everything too. These are per command, unlike
signals to the keeper, so a late one can never reach the keeper's next command.
toolrig empties and removes the cgroup of a keeper that died; a live keeper's cgroup is its own.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import fcntl
import json
import mmap
import os
import resource
import select
import signal
import socket
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_CWD_FD = 3
_PRELUDE_FD = 4
EXTRA_FD = _EXTRA_FD = 5  # the first number ``extra_fds`` are given in the command (5, 6, ...)
_HIGH_FD = 10
_COUNT_INTERVAL = 0.02
INLINE_REQUEST = 64 * 1024  # a larger request comes in a memfd (a small receive buffer is a cheap one)
SPARES = 2  # keepers that go back to the socket after each command (one more is forked while all are busy)
_MAX_SPARE_DEATHS = 50
SLOTS = 4096  # keepers the board can hold at once; with every slot taken, a request waits for a keeper to be free
_TAKEN = SLOTS  # the board's 8-byte count of requests taken, after the slots (the launcher's death accounting)
_IDLE, _BUSY, _BACK = b"\x01", b"\x00", b"\x02"  # _BACK: done with a command, on its way back to the socket

# Read by bash from $BASH_ENV before the command: set limits, report the final directory, close what only the
# sandbox's wrapper needed (a session's namespaces) and the prelude itself. A plain ``exec``: under ``builtin``
# its redirections would apply to that one command and be undone.
PRELUDE = """\
if [ -n "${__TOOLRIG_ULIMITS-}" ]; then builtin ulimit $__TOOLRIG_ULIMITS || builtin exit 126; fi
if [ -n "${__TOOLRIG_CWD_FD-}" ]; then
  builtin trap 'builtin printf "%s" "$PWD" >&'"$__TOOLRIG_CWD_FD"' 2>/dev/null' EXIT
fi
case "${__TOOLRIG_CLOSE_FDS-}" in *[!0-9' ']*) ;; ?*) for __toolrig_fd in $__TOOLRIG_CLOSE_FDS; do
  builtin eval "exec $__toolrig_fd<&-"; done; builtin unset __toolrig_fd;; esac
builtin unset BASH_ENV __TOOLRIG_ULIMITS __TOOLRIG_CWD_FD __TOOLRIG_CLOSE_FDS
exec 4<&-
"""


_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _prctl(option: int, value: int) -> None:
    if _c().prctl(option, value, 0, 0, 0) != 0:  # pragma: no cover - Linux >= 3.4
        raise OSError(ctypes.get_errno(), f"prctl({option})")


# ioprio_set and ioprio_get (IOPRIO_WHO_PROCESS, this process), which the os module does not offer, by machine.
_IOPRIO_CALLS = {"x86_64": (251, 252), "aarch64": (30, 31), "riscv64": (30, 31), "ppc64le": (273, 274)}.get(
    os.uname().machine
)


def _ioprio() -> int | None:
    """This process's I/O priority (``ionice``), or None where this machine's syscall numbers are not known."""
    if _IOPRIO_CALLS is None:  # pragma: no cover - other machines
        return None
    return int(_c().syscall(_IOPRIO_CALLS[1], 1, 0))


def _set_ioprio(value: int) -> None:
    if _IOPRIO_CALLS is not None and _c().syscall(_IOPRIO_CALLS[0], 1, 0, value) != 0:
        raise OSError(ctypes.get_errno(), "ioprio_set")


def _subreaper() -> None:
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _read(path: str) -> bytes:
    """A small kernel file in one read (no buffered file object: this runs for every command)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, 16384)
        while data and (more := os.read(fd, 16384)):  # a large cgroup or family does not fit in one read
            data += more
        return data
    finally:
        os.close(fd)


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's), from /proc."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            found.extend(map(int, _read(f"/proc/{pid}/task/{tid}/children").split()))
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = [pid]
    while todo and len(out) < 100_000:
        kids = children(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def kill_all_below(pid: int) -> None:
    """SIGKILL every descendant of ``pid`` (a subreaper: orphans come back to it) until none is left."""
    for _ in range(2000):
        found = descendants(pid)
        if not found:
            return
        for child in found:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        _reap_some()
        time.sleep(0.001)


_reaped: list[tuple[int, int]] = []  # (pid, wait status) reaped but not yet looked at by the keeper's loop


def _reap_all() -> list[tuple[int, int]]:
    """Reap every exited child; return all reaped since the last call (``kill_all_below`` reaps too)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        _reaped.append((pid, status))
    found = list(_reaped)
    _reaped.clear()
    return found


def _reap_some() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _reaped.append((pid, status))


# What a process passes on to the processes it starts and another process of the same user may change on it
# (prlimit, renice, taskset, chrt, ionice, /proc/PID/oom_score_adj): a command can set them on its keeper (which
# stays for the next command) or on the launcher (which forks the next keepers). Looked at after every command.
_RLIMITS = tuple(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_"))
Attributes = tuple[object, ...]


def own_oom_score() -> int:
    """This process's ``oom_score_adj``, held open (read with one ``pread``): after a fork, open it again."""
    return os.open("/proc/self/oom_score_adj", os.O_RDONLY | os.O_CLOEXEC)


def attributes(oom_fd: int) -> Attributes:
    """This process's inheritable attributes that a process of the same user may change (~15 µs to read)."""
    return (
        tuple(resource.getrlimit(limit) for limit in _RLIMITS),
        os.getpriority(os.PRIO_PROCESS, 0),
        os.sched_getaffinity(0),
        os.sched_getscheduler(0),
        os.sched_getparam(0).sched_priority,
        os.pread(oom_fd, 32, 0),
        _ioprio(),
    )


def restore(pristine: Attributes, oom_fd: int) -> bool:
    """Put back what a command changed; whether all of it is as it was.

    Taking back a lowered hard limit or a lowered priority needs a privilege we may not have: then this process
    must not start another command.
    """
    now = attributes(oom_fd)
    if now == pristine:
        return True
    limits, nice, cpus, policy, priority, oom, ioprio = pristine
    try:
        for limit, value, was in zip(_RLIMITS, limits, now[0], strict=True):  # type: ignore[call-overload]
            if value != was:
                resource.setrlimit(limit, value)
        if now[1] != nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)  # type: ignore[arg-type]
        if now[2] != cpus:
            os.sched_setaffinity(0, cpus)  # type: ignore[arg-type]
        if now[3:5] != (policy, priority):
            os.sched_setscheduler(0, policy, os.sched_param(priority))  # type: ignore[arg-type]
        if now[5] != oom:
            _write("/proc/self/oom_score_adj", oom.decode())  # type: ignore[attr-defined]
        if now[6] != ioprio:
            _set_ioprio(ioprio)  # type: ignore[arg-type]
    except (OSError, ValueError):
        return False
    return attributes(oom_fd) == pristine


def _high(fd: int) -> int:
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
    os.close(fd)
    return new


class Board:
    """Which keepers are idle, shared by the launcher and its keepers (the module docstring says why)."""

    def __init__(self) -> None:
        self.memory = mmap.mmap(-1, SLOTS + 8)  # shared and anonymous: no descriptor a command could open
        self.lock = os.memfd_create("toolrig-board", os.MFD_CLOEXEC)
        self.free = list(range(SLOTS - 1, -1, -1))  # the launcher's own list, lowest slot last

    def claim(self) -> int | None:
        """A slot for a new keeper, marked idle (it is, as soon as it reads the socket), or None if all are used."""
        if not self.free:
            return None
        slot = self.free.pop()
        self.mark(slot, _IDLE)
        return slot

    def release(self, slot: int) -> bool:
        """Free a dead keeper's slot; whether the keeper was idle when it died."""
        was_idle = self.idle(slot)
        self.mark(slot, _BUSY)
        self.free.append(slot)
        return was_idle

    def mark(self, slot: int, state: bytes) -> None:
        self.memory[slot : slot + 1] = state

    def idle(self, slot: int) -> bool:
        return self.memory[slot] == 1

    def ready_soon(self, slot: int) -> bool:
        """Idle, or back from a command and about to read the socket: a keeper the next request can wait for."""
        return self.memory[slot] in (1, 2)

    def taken(self) -> int:
        return int.from_bytes(self.memory[_TAKEN : _TAKEN + 8], "little")

    def take(self, slot: int) -> bool:
        """Mark ``slot`` busy and count the request; whether another slot is still idle.

        Under a lock, so that two keepers taking requests at once cannot each see the other idle (the lock orders
        their marks and looks). The lock is only tried: contended, the answer is "none idle" (the launcher then
        looks at the board itself), never a wait that a command holding the lock could prolong.
        """
        try:
            fcntl.lockf(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.mark(slot, _BUSY)
            return False
        try:
            self.mark(slot, _BUSY)
            self.memory[_TAKEN : _TAKEN + 8] = ((self.taken() + 1) % (1 << 63)).to_bytes(8, "little")
            return self.memory.find(_IDLE, 0, SLOTS) >= 0 or self.memory.find(_BACK, 0, SLOTS) >= 0
        finally:
            with contextlib.suppress(OSError):
                fcntl.lockf(self.lock, fcntl.LOCK_UN)


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
    out, err, status, start = fds[:4]
    extra = request.get("extra_fds")
    count = extra if isinstance(extra, int) and 0 < extra <= len(fds) - 4 else 0
    cwd_fd = fds[4] if len(fds) - count > 4 else -1
    os.set_blocking(status, False)
    _reaped.clear()
    me = os.getpid()
    limit = request.get("count_limit")
    pids_max = request.get("pids_max")
    if isinstance(pids_max, int) and keeper.cgroup is None:
        limit = pids_max - 1  # no cgroup could be made for this keeper: count instead
    keeper.set_pids_max(str(pids_max) if isinstance(pids_max, int) else "max")
    os.fchdir(start)
    env = dict(request["env"])  # type: ignore[call-overload]
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
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
    if _caller_gone(status):  # a request toolrig gave up on (nothing took it in time, or it was cancelled) never runs
        raise OSError("toolrig no longer waits for this command")
    leader = os.posix_spawnp(
        argv[0],
        argv,
        env,
        file_actions=actions,
        setsid=True,
        setsigmask=(),
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGINT),
    )
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
    if keeper.orphaned():  # it will not stay: its cgroup goes before toolrig hears the command is over
        keeper.leave()
    keeper.coming_back()
    tell(f"X {exit_code}\n".encode())
    os.close(status)
    fds[2] = -1
    _close_all_but_status(fds)


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
            data, fds = _recv_fds(sock, INLINE_REQUEST + 1024, 8)
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


def main(fd: int, base: str = "", owner: int = 0) -> None:
    if os.fork():
        os._exit(0)  # the launcher's parent becomes init (or a subreaper above toolrig), never toolrig
    os.setsid()
    _subreaper()
    me = os.getpid()
    os.write(1, str(me).encode())  # toolrig watches us through a pidfd
    # Nothing of toolrig's stays open here: its stderr may be the user's terminal, which a command could reach
    # through /proc/PPID/fd/2 (a keeper's or ours) to write escapes past the output's cleaning, or to read keys.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)  # keepers hold it while their command runs: no command may read requests
    prelude_fd = os.memfd_create("toolrig-prelude", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.write(prelude_fd, PRELUDE.encode())
    # Every command gets it: sealed, so that none can rewrite the next one's limits.
    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK
    fcntl.fcntl(prelude_fd, fcntl.F_ADD_SEALS, seals)
    oom_fd = own_oom_score()
    pristine = attributes(oom_fd)  # as toolrig started us: no command has run yet
    control_r, control_w = os.pipe()  # keepers say: took the last idle turn (T), toolrig is gone (E)
    board = Board()  # which keepers are idle: marked by the keepers themselves, read here when something wakes us
    keepers: dict[int, tuple[str | None, int]] = {}  # every keeper: its cgroup and its slot on the board
    staying: set[int] = set()  # the keepers that go back to the socket after a command (at most SPARES)
    taken = board.taken()
    counter = iter(range(1, 1 << 62))
    # SIGCHLD only wakes the loop, through a pipe the C-level handler writes: a Python handler run between two
    # blocking reads can be missed (the signal lands after the check and before the read blocks), and a missed
    # one leaves a killed keeper's orphans alive (measured: 1 in ~200 under load).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    os.set_blocking(control_r, False)

    def fork_keeper() -> bool:
        """Fork a keeper if a slot is free; False if this launcher was changed for good (it must stop)."""
        if not restore(pristine, oom_fd):  # a command changed us (same user): our keepers would inherit it
            return False
        slot = board.claim()
        if slot is None:  # every slot holds a live keeper: the request waits for one to be back
            return True
        cgroup = None
        for _ in range(4 if base else 0):
            # Not guessable: a command that made the next names first left every later keeper with no cgroup.
            path = f"{base}/toolrig-spare-{owner}-{me}-{next(counter)}-{os.urandom(6).hex()}"
            try:
                os.mkdir(path)
            except FileExistsError:
                continue
            except OSError:
                break
            cgroup = path
            break
        stays = len(staying) < SPARES
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # not the launcher's wake-up until its own
        pid = os.fork()
        if pid == 0:
            for inherited in (control_r, wake_r, wake_w, oom_fd):
                os.close(inherited)
            keep(sock, _Keeper(control_w, prelude_fd, cgroup, me, stays, board, slot, pristine))
        keepers[pid] = (cgroup, slot)
        if stays:
            staying.add(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        return True

    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for _ in range(SPARES):
        fork_keeper()
    pending = b""
    running = True
    deaths = 0  # keepers that died in a row without taking a request
    while running:
        ready, _, _ = select.select([control_r, wake_r], [], [])
        # Messages first: a keeper's last words were written before it died, so they are read before its death.
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(control_r, 4096):
                pending += chunk
                if len(chunk) < 4096:
                    break
        ended: list[int] = []
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 4096):
                    pass
            ended = [pid for pid, _status in _reap_all() if pid in keepers]
            # Our only children are keepers: any other was left to us by a keeper that was killed (a command may
            # kill or stop its keeper), and must not outlive it. Its own children come back to us in turn, and
            # each death wakes us again.
            for orphan in set(children(me)) - set(keepers):
                with contextlib.suppress(OSError):
                    os.kill(orphan, signal.SIGKILL)
        lines = pending.split(b"\n")
        pending = lines.pop()
        events = [(kind, int(sender)) for kind, _, sender in (line.decode().partition(" ") for line in lines)]
        events += [("D", pid) for pid in ended]
        if board.taken() != taken:  # a request was taken since we last looked: the keepers can start
            taken = board.taken()
            deaths = 0
        for kind, pid in events:
            if kind == "E":
                running = False
                break
            if pid not in keepers:
                continue
            if kind == "T":  # the last idle keeper took a request: another must be ready for the next
                deaths = 0
            elif kind == "D":  # a keeper ended (killed, or done with its one command)
                cgroup, slot = keepers.pop(pid)
                deaths += board.release(slot)
                staying.discard(pid)
                _remove_cgroup(cgroup)
                if deaths > _MAX_SPARE_DEATHS:  # keepers cannot start here: close, so toolrig's send fails
                    running = False
                    break
            needed = not any(board.ready_soon(slot) for _cgroup, slot in keepers.values()) or len(staying) < SPARES
            if needed and not fork_keeper():
                # Go, so toolrig starts a new launcher: idle keepers die with us (PDEATHSIG); busy ones keep their
                # commands to the end, then leave (orphaned), taking their cgroups with them.
                sock.close()
                os._exit(0)
    sock.close()
    for pid in list(keepers):  # toolrig is gone: so is everything it started
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    kill_all_below(me)
    for cgroup, _slot in keepers.values():
        _remove_cgroup(cgroup)
    os._exit(0)


def _remove_cgroup(cgroup: str | None) -> None:
    """Kill what is left in a dead keeper's cgroup, and remove it (toolrig may be doing the same)."""
    if cgroup is None:
        return
    for _ in range(200):
        try:
            with open(f"{cgroup}/cgroup.procs") as handle:
                pids = [int(p) for p in handle.read().split()]
        except (OSError, ValueError):
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap_some()
        time.sleep(0.005)
    with contextlib.suppress(OSError):
        os.rmdir(cgroup)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "", int(sys.argv[3]) if len(sys.argv) > 3 else 0)
