"""The launcher: a small process that never held toolrig's secrets and starts every command.

Trust model: the commands it starts are hostile and run as the same user as toolrig. A command can read the
environment of each of its ancestors through ``/proc/PID/environ``; so its ancestors are a per-command
*keeper* and this launcher, both started with an empty environment, and the launcher is double-forked away
from toolrig (its parent is init or the nearest subreaper, not toolrig). Every keeper is a child subreaper
(``PR_SET_CHILD_SUBREAPER``): whatever the command starts, ``setsid`` and double forks included, stays below
the keeper, which kills all of it when the command's leader exits, on request, or when the process count
goes over the limit where no pids cgroup counts for us. The launcher is a subreaper too, so a command that
kills its keeper leaves its processes to the launcher, which kills them.

Run as a script with the standard library only (``python -I -S launcher.py FD BASE OWNER``): it imports
nothing of toolrig, so starting it is quick and it carries none of toolrig's state.

Speed: the next command's keeper is forked *before* the command is asked for (a spare), and has already
joined a fresh pids cgroup of its own under BASE (the cgroup-v1 migration waits for an RCU grace period:
milliseconds under load). The spare itself reads the next request from the socket, so a command costs one
hand-off and one ``posix_spawn``; the launcher only forks the next spare once one is taken. An idle spare
dies with the launcher (``PR_SET_PDEATHSIG``), so a dead launcher never leaves a reader on the socket.

Protocol, on a SOCK_SEQPACKET socket: one message per command, JSON, with the file descriptors for the
command's stdout, stderr, a status pipe and (optionally) the final-directory pipe. On the status pipe the
keeper writes ``P <leader> <keeper> <cgroup directory or ->`` once the command started (or ``E <message>``),
``L`` if it killed the command for having too many processes, and ``X <exit code>`` when the leader ended; it
closes the pipe once every process of the command is gone. The starter removes the cgroup directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import signal
import socket
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_CWD_FD = 3
_PRELUDE_FD = 4
_HIGH_FD = 10
_COUNT_INTERVAL = 0.02
SPARES = 2  # idle keepers kept ready: one is always there while the one just taken is being replaced
_MAX_SPARE_DEATHS = 50

# Read by bash from $BASH_ENV before the command: set limits, report the final directory.
PRELUDE = """\
if [ -n "${__TOOLRIG_ULIMITS-}" ]; then builtin ulimit $__TOOLRIG_ULIMITS || builtin exit 126; fi
if [ -n "${__TOOLRIG_CWD_FD-}" ]; then
  builtin trap 'builtin printf "%s" "$PWD" >&'"$__TOOLRIG_CWD_FD"' 2>/dev/null' EXIT
fi
builtin unset BASH_ENV __TOOLRIG_ULIMITS __TOOLRIG_CWD_FD
builtin exec 4<&-
"""


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:  # pragma: no cover - Linux >= 3.4
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def _subreaper() -> None:
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's), from /proc."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.extend(int(p) for p in handle.read().split())
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


def _high(fd: int) -> int:
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
    os.close(fd)
    return new


class _Taken:
    """Tells the launcher, once, that this spare is a keeper now (so it forks the next spare)."""

    def __init__(self, control: int) -> None:
        self.control = control

    def say(self) -> None:
        if self.control >= 0:
            with contextlib.suppress(OSError):
                os.write(self.control, f"T {os.getpid()}\n".encode())
                os.close(self.control)
            self.control = -1


def keeper(request: dict[str, object], fds: list[int], prelude_fd: int, cgroup: str | None, taken: _Taken) -> None:
    """Start the command, then wait for it and end everything it started. Never returns."""
    status = fds[2]
    try:
        _keep(request, fds, prelude_fd, cgroup, taken)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(status, f"E {exc}\n".encode(errors="replace"))
    taken.say()
    os._exit(0)


def _keep(request: dict[str, object], fds: list[int], prelude_fd: int, cgroup: str | None, taken: _Taken) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1})
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    _subreaper()
    out, err, status = (_high(fd) for fd in fds[:3])
    cwd_fd = _high(fds[3]) if len(fds) > 3 else -1
    prelude_fd = fcntl.fcntl(prelude_fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
    me = os.getpid()
    limit = request.get("count_limit")
    pids_max = request.get("pids_max")
    if isinstance(pids_max, int):
        if cgroup is not None:  # we are in it already; the command inherits it
            with open(f"{cgroup}/pids.max", "w") as handle:
                handle.write(str(pids_max))
        else:  # no cgroup could be made for this spare: count instead
            limit = pids_max - 1
    os.chdir(str(request["cwd"]))
    env = dict(request["env"])  # type: ignore[call-overload]
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
    ]
    if request.get("prelude"):
        actions.append((os.POSIX_SPAWN_DUP2, prelude_fd, _PRELUDE_FD))
        env["BASH_ENV"] = f"/dev/fd/{_PRELUDE_FD}"
        if cwd_fd >= 0:
            actions.append((os.POSIX_SPAWN_DUP2, cwd_fd, _CWD_FD))
            env["__TOOLRIG_CWD_FD"] = str(_CWD_FD)
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    leader = os.posix_spawnp(
        argv[0],
        argv,
        env,
        file_actions=actions,
        setsid=True,
        setsigmask=(),
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGINT),
    )
    for fd in (out, err, cwd_fd, prelude_fd):
        if fd >= 0:
            os.close(fd)
    os.write(status, f"P {leader} {me} {cgroup or '-'}\n".encode())
    # Only now may the next spare join its cgroup: a cgroup migration holds up forks machine-wide while the
    # kernel waits for an RCU grace period, and this command's spawn must not wait on it.
    taken.say()
    interval = _COUNT_INTERVAL if isinstance(limit, int) else None
    running = True
    while True:
        if running:
            info = signal.sigtimedwait({signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1}, interval or 3600)
            if info is not None and info.si_signo == signal.SIGTERM:
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGTERM)
            elif info is not None and info.si_signo == signal.SIGUSR1:
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGKILL)
                kill_all_below(me)
            elif isinstance(limit, int) and len(descendants(me)) > limit:
                os.write(status, b"L\n")
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGKILL)
                kill_all_below(me)
        for pid, code in _reap_all():
            if pid == leader and running:
                running = False
                with contextlib.suppress(OSError):
                    os.write(status, f"X {os.waitstatus_to_exitcode(code)}\n".encode())
                with contextlib.suppress(OSError):
                    os.killpg(leader, signal.SIGKILL)  # the group is gone once its last member is reaped
        if not running:
            kill_all_below(me)
            return


def _read_request(sock: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """The next well-formed request and its descriptors, or None once toolrig's end is closed."""
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 8)
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
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except (ValueError, IndexError, TypeError, OSError):
            for received in fds:
                os.close(received)
            continue
        return request, fds


def spare(sock: socket.socket, control: int, prelude_fd: int, cgroup: str | None, launcher: int) -> None:
    """A keeper-to-be: join a fresh cgroup now, then take the next request off the socket. Never returns."""
    me = os.getpid()
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # idle, it must not outlive the launcher
        if os.getppid() != launcher:
            os._exit(0)
        if cgroup is not None:
            try:
                with open(f"{cgroup}/cgroup.procs", "w") as handle:
                    handle.write(str(me))
            except OSError:
                cgroup = None
        taken = _read_request(sock)
        if taken is None:
            os.write(control, f"E {me}\n".encode())
            os._exit(0)
        _prctl(PR_SET_PDEATHSIG, 0)  # from here on it keeps a command: it outlives the launcher if need be
        sock.close()
    except BaseException:  # a spare that cannot start just ends; the launcher forks another
        os._exit(1)
    keeper(*taken, prelude_fd, cgroup, _Taken(control))


def main(fd: int, base: str = "", owner: int = 0) -> None:
    if os.fork():
        os._exit(0)  # the launcher's parent becomes init (or a subreaper above toolrig), never toolrig
    os.setsid()
    _subreaper()
    me = os.getpid()
    sock = socket.socket(fileno=fd)
    prelude_fd = os.memfd_create("toolrig-prelude", os.MFD_CLOEXEC)
    os.write(prelude_fd, PRELUDE.encode())
    control_r, control_w = os.pipe()  # spares say here when they took a request or found toolrig gone
    keepers: set[int] = set()
    spares: dict[int, str | None] = {}  # the idle spares waiting on the socket, and their cgroups
    counter = iter(range(1, 1 << 62))

    def reap(_signum: int, _frame: object) -> None:
        for pid, _status in _reap_all():
            keepers.discard(pid)
            if pid in spares:  # a spare died without taking a request (killed): fork another
                with contextlib.suppress(OSError):
                    os.write(control_w, f"D {pid}\n".encode())
        # Our only children are keepers: any other was left to us by a keeper that was killed (a command may
        # kill or stop its keeper), and must not outlive it. Its own children come back to us in turn.
        for orphan in set(children(me)) - keepers:
            with contextlib.suppress(OSError):
                os.kill(orphan, signal.SIGKILL)

    def fork_spare() -> None:
        cgroup = None
        if base:
            path = f"{base}/toolrig-spare-{owner}-{me}-{next(counter)}"
            with contextlib.suppress(OSError):
                os.mkdir(path)
                cgroup = path
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # a new keeper is never taken for an orphan
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.close(control_r)
            spare(sock, control_w, prelude_fd, cgroup, me)
        keepers.add(pid)
        spares[pid] = cgroup
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})

    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for _ in range(SPARES):
        fork_spare()
    pending = b""
    running = True
    deaths = 0  # spares that died in a row without taking a request
    while running:
        pending += os.read(control_r, 4096)
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            kind, _, sender = line.decode().partition(" ")
            if kind == "E":
                running = False
            elif int(sender) in spares:  # "T": taken, "D": died; either way it needs a successor
                cgroup = spares.pop(int(sender))
                deaths = deaths + 1 if kind == "D" else 0
                if kind == "D" and cgroup is not None:
                    with contextlib.suppress(OSError):
                        os.rmdir(cgroup)
                if deaths > _MAX_SPARE_DEATHS:  # spares cannot start here: close, so toolrig's send fails
                    running = False
                    break
                fork_spare()  # a taken spare's cgroup is the command's now: toolrig removes it
    sock.close()
    for pid in list(keepers):  # toolrig is gone: so is everything it started
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 3
    while keepers and time.monotonic() < deadline:
        time.sleep(0.01)
    kill_all_below(me)
    for cgroup in spares.values():  # the idle spares' cgroups; those that hold a command are toolrig's
        if cgroup is not None:
            with contextlib.suppress(OSError):
                os.rmdir(cgroup)
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "", int(sys.argv[3]) if len(sys.argv) > 3 else 0)
