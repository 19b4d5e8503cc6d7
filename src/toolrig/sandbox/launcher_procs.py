"""The launcher's dealings with the kernel: prctl, process trees, reaping, inherited attributes, cgroups.

Part of the launcher (``launcher.py``): standard library only, imported by it as a top-level module when it runs
as a script, so that it carries none of toolrig's state.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import signal
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_HIGH_FD = 10

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
