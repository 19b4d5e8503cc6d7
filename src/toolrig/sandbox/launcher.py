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
nothing of toolrig but its own three modules beside it (``launcher_board``: the board; ``launcher_keeper``: a
keeper and the command it keeps; ``launcher_procs``: process trees, reaping, attributes, cgroups), so starting it is
quick and it carries none of toolrig's state.

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

import contextlib
import fcntl
import os
import select
import signal
import socket
import sys

if __package__:  # imported by toolrig (its constants, tests)
    from toolrig.sandbox.launcher_board import Board
    from toolrig.sandbox.launcher_keeper import EXTRA_FD, INLINE_REQUEST, _Keeper, keep
    from toolrig.sandbox.launcher_procs import (
        _reap_all,
        _remove_cgroup,
        _subreaper,
        attributes,
        children,
        kill_all_below,
        own_oom_score,
        restore,
    )  # fmt: skip
else:  # run as the launcher script (``python -I -S launcher.py``): its siblings, found after the standard library
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # last: no module of ours shadows the stdlib
    from launcher_board import Board  # type: ignore[import-not-found,no-redef]
    from launcher_keeper import EXTRA_FD, INLINE_REQUEST, _Keeper, keep  # type: ignore[import-not-found,no-redef]
    from launcher_procs import (  # type: ignore[import-not-found,no-redef]
        _reap_all,
        _remove_cgroup,
        _subreaper,
        attributes,
        children,
        kill_all_below,
        own_oom_score,
        restore,
    )  # fmt: skip

__all__ = ["EXTRA_FD", "INLINE_REQUEST", "PRELUDE", "SPARES", "Board", "main"]

SPARES = 2  # keepers that go back to the socket after each command (one more is forked while all are busy)
_MAX_SPARE_DEATHS = 50

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


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "", int(sys.argv[3]) if len(sys.argv) > 3 else 0)
