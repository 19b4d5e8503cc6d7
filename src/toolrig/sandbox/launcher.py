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
command's stdout, stderr, a status socket, the directory it starts in, (optionally) the final-directory pipe and
(optionally, with ``"stdin": true``) the read end of the pipe a background command reads as its stdin; any other
command's stdin is /dev/null. Last may come ``extra_fds`` descriptors for the sandbox's wrapper (a session's
namespaces), given to the command as 5, 6, ... Each arrives close-on-exec, reaches only its own command (as 0, 1,
2, 5, ...) and is closed by the keeper when that command is over: none reaches a later command. The directory
comes as a descriptor toolrig opened beneath the workspace without following symlinks: the keeper ``fchdir``s to it
and never walks a path that was checked earlier (a symlink swapped in meanwhile would lead out).
On the status socket the keeper writes ``P <leader> <keeper> <cgroup directory or ->`` once the command started (or
``E <message>`` if it could not start), ``L`` if it killed the command for having too many
processes, and ``X <exit code>`` once the leader ended and every process of the command is gone (the stdin pipe
already closed: a command reported over holds none of it); then it closes its end, and only then its copies of
the output pipes (toolrig reads them to empty after ``X``, without
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
    os.write(1, str(os.getpid()).encode())  # toolrig watches us through a pidfd
    # Nothing of toolrig's stays open here: its stderr may be the user's terminal, which a command could reach
    # through /proc/PPID/fd/2 (a keeper's or ours) to write escapes past the output's cleaning, or to read keys.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)  # keepers hold it while their command runs: no command may read requests
    _Launcher(sock, base, owner).run()


def _sealed_prelude() -> int:
    """The prelude in a memfd every command gets: sealed, so that none can rewrite the next one's limits."""
    prelude_fd = os.memfd_create("toolrig-prelude", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.write(prelude_fd, PRELUDE.encode())
    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK
    fcntl.fcntl(prelude_fd, fcntl.F_ADD_SEALS, seals)
    return prelude_fd


class _Launcher:
    """The launcher's loop: keep keepers ready, account for their deaths, end with toolrig."""

    def __init__(self, sock: socket.socket, base: str, owner: int) -> None:
        self.sock = sock
        self.base = base
        self.owner = owner
        self.me = os.getpid()
        self.prelude_fd = _sealed_prelude()
        self.oom_fd = own_oom_score()
        self.pristine = attributes(self.oom_fd)  # as toolrig started us: no command has run yet
        self.control_r, self.control_w = os.pipe()  # keepers say: took the last idle turn (T), toolrig is gone (E)
        self.board = Board()  # which keepers are idle: marked by the keepers themselves, read when something wakes us
        self.keepers: dict[int, tuple[str | None, int]] = {}  # every keeper: its cgroup and its slot on the board
        self.staying: set[int] = set()  # the keepers that go back to the socket after a command (at most SPARES)
        self.taken = self.board.taken()
        self.counter = iter(range(1, 1 << 62))
        # SIGCHLD only wakes the loop, through a pipe the C-level handler writes: a Python handler run between two
        # blocking reads can be missed (the signal lands after the check and before the read blocks), and a missed
        # one leaves a killed keeper's orphans alive (measured: 1 in ~200 under load).
        self.wake_r, self.wake_w = os.pipe()
        for end in (self.wake_r, self.wake_w, self.control_r):
            os.set_blocking(end, False)
        self.pending = b""
        self.deaths = 0  # keepers that died in a row without taking a request

    def fork_keeper(self) -> bool:
        """Fork a keeper if a slot is free; False if this launcher was changed for good (it must stop)."""
        if not restore(self.pristine, self.oom_fd):  # a command changed us (same user): our keepers would inherit it
            return False
        slot = self.board.claim()
        if slot is None:  # every slot holds a live keeper: the request waits for one to be back
            return True
        cgroup = self._new_cgroup()
        stays = len(self.staying) < SPARES
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # not the launcher's wake-up until its own
        pid = os.fork()
        if pid == 0:
            for inherited in (self.control_r, self.wake_r, self.wake_w, self.oom_fd):
                os.close(inherited)
            keeper = _Keeper(self.control_w, self.prelude_fd, cgroup, self.me, stays, self.board, slot, self.pristine)
            keep(self.sock, keeper)
        self.keepers[pid] = (cgroup, slot)
        if stays:
            self.staying.add(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        return True

    def _new_cgroup(self) -> str | None:
        for _ in range(4 if self.base else 0):
            # Not guessable: a command that made the next names first left every later keeper with no cgroup.
            path = f"{self.base}/toolrig-spare-{self.owner}-{self.me}-{next(self.counter)}-{os.urandom(6).hex()}"
            try:
                os.mkdir(path)
            except FileExistsError:
                continue
            except OSError:
                return None
            return path
        return None

    def run(self) -> None:
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for _ in range(SPARES):
            self.fork_keeper()
        running = True
        while running:
            ready, _, _ = select.select([self.control_r, self.wake_r], [], [])
            events = self._events(self.wake_r in ready)
            if self.board.taken() != self.taken:  # a request was taken since we last looked: the keepers can start
                self.taken = self.board.taken()
                self.deaths = 0
            running = all(self._handle(kind, pid) for kind, pid in events)
        self._end()

    def _events(self, woken: bool) -> list[tuple[str, int]]:
        """What happened: keepers' words (``T``, ``E``), then their deaths (``D``)."""
        # Messages first: a keeper's last words were written before it died, so they are read before its death.
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.control_r, 4096):
                self.pending += chunk
                if len(chunk) < 4096:
                    break
        ended: list[int] = []
        if woken:
            with contextlib.suppress(BlockingIOError):
                while os.read(self.wake_r, 4096):
                    pass
            ended = [pid for pid, _status in _reap_all() if pid in self.keepers]
            # Our only children are keepers: any other was left to us by a keeper that was killed (a command may
            # kill or stop its keeper), and must not outlive it. Its own children come back to us in turn, and
            # each death wakes us again.
            for orphan in set(children(self.me)) - set(self.keepers):
                with contextlib.suppress(OSError):
                    os.kill(orphan, signal.SIGKILL)
        lines = self.pending.split(b"\n")
        self.pending = lines.pop()
        events = [(kind, int(sender)) for kind, _, sender in (line.decode().partition(" ") for line in lines)]
        return events + [("D", pid) for pid in ended]

    def _handle(self, kind: str, pid: int) -> bool:
        """One event; whether the launcher goes on."""
        if kind == "E":
            return False
        if pid not in self.keepers:
            return True
        if kind == "T":  # the last idle keeper took a request: another must be ready for the next
            self.deaths = 0
        elif kind == "D":  # a keeper ended (killed, or done with its one command)
            cgroup, slot = self.keepers.pop(pid)
            self.deaths += self.board.release(slot)
            self.staying.discard(pid)
            _remove_cgroup(cgroup)
            if self.deaths > _MAX_SPARE_DEATHS:  # keepers cannot start here: close, so toolrig's send fails
                return False
        ready = any(self.board.ready_soon(slot) for _cgroup, slot in self.keepers.values())
        if (not ready or len(self.staying) < SPARES) and not self.fork_keeper():
            # Go, so toolrig starts a new launcher: idle keepers die with us (PDEATHSIG); busy ones keep their
            # commands to the end, then leave (orphaned), taking their cgroups with them.
            self.sock.close()
            os._exit(0)
        return True

    def _end(self) -> None:
        self.sock.close()
        for pid in list(self.keepers):  # toolrig is gone: so is everything it started
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        kill_all_below(self.me)
        for cgroup, _slot in self.keepers.values():
            _remove_cgroup(cgroup)
        os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "", int(sys.argv[3]) if len(sys.argv) > 3 else 0)
