"""Running a child process for a tool: contained, killable, with bounded output and a scrubbed environment.

Trust model: the command is hostile and runs as our user. It is started by the launcher
(``toolrig.sandbox.launcher``), never by toolrig itself, so no ancestor of the command holds toolrig's
environment; a per-command keeper (a child subreaper) starts it in its own session, inside its own pids cgroup
where the kernel lets us create one, and counts its processes where it does not. On timeout, cancellation,
an output flood or when the leader exits, everything the command started dies, ``setsid`` children included.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.arglimits import too_long
from toolrig.sandbox.capped import CappedText
from toolrig.sandbox.command_watch import Keeper, Watch
from toolrig.sandbox.environment import DEFAULT_ENV_ALLOW, SECRET_NAME, scrub_env
from toolrig.sandbox.launcher_client import Launcher
from toolrig.sandbox.pids import Limits, PidsCgroup, _user_process_count

__all__ = [
    "DEFAULT_ENV_ALLOW", "SECRET_NAME", "CappedText", "Launcher", "Limits", "PidsCgroup", "ProcessResult",
    "containment", "run_contained", "scrub_env",
]  # fmt: skip

log = logging.getLogger("toolrig.sandbox.process")

_READ_SIZE = 65536
_DRAIN_SECONDS = 1.0
# How long a request may wait to be taken after its timeout (or, with no timeout, at all) before its launcher is
# taken for broken: a command can stop the launcher and kill every keeper, and then nothing would ever read it.
_START_SECONDS = 10.0
# How long a request closed unread waits for its launcher to end: a launcher that stops closes its socket, then
# cleans up and exits, so the request is seen lost first (CI: "the launcher stopped before it started the command").
_LOST_WAIT = 2.0

# ------------------------------------------------------------------------------------------ running


@dataclass
class ProcessResult:
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    duration_ms: float
    final_cwd: str | None = None
    stopped: str | None = None
    notes: list[str] = field(default_factory=list)
    containment: str = ""


def containment(limits: Limits, cgroup: PidsCgroup | None) -> str:
    """Which containment holds this command, in words (reported with every result)."""
    if cgroup is not None:
        return "pids cgroup (process limit, kill all) + subreaper keeper"
    if limits.max_processes:
        return "subreaper keeper (kill all) + process count (no cgroup available)"
    return "subreaper keeper (kill all); no process limit"


async def run_contained(
    argv: Sequence[str],
    *,
    cwd: Path,
    cwd_fd: int | None = None,
    env: Mapping[str, str],
    timeout: float | None,  # noqa: ASYNC109 - the process is killed at the deadline, not just abandoned
    limits: Limits = Limits(),  # noqa: B008 - a frozen dataclass
    output_cap: int = 50_000,
    max_output_bytes: int = 64 * 1024 * 1024,
    kill_grace: float = 2.0,
    report_cwd: bool = False,
    prelude: bool = True,
    on_progress: Callable[[float, str], None] | None = None,
    progress_interval: float = 1.0,
    retry: bool = True,
    extra_fds: Sequence[int] = (),
    sinks: tuple[CappedText, CappedText] | None = None,
    stdin_fd: int | None = None,
) -> ProcessResult:
    """Run ``argv`` contained; the caller's cancellation kills the whole process tree before it propagates.

    The launcher's keeper starts it (in its own session, in a pids cgroup where the kernel offers one, or
    counted where not), in the directory ``cwd_fd`` holds (the caller's descriptor, left open; ``cwd`` is then
    only its name), or else in ``cwd`` opened here: the keeper changes into a descriptor, never walks a path.
    With ``prelude`` the child must be bash: it applies the limits itself before the command starts and, with
    ``report_cwd``, says where it finished. ``on_progress(seconds, message)`` is called every
    ``progress_interval`` seconds while the command runs (MCP clients show it). ``extra_fds`` (left open, the
    caller's) reach the command as descriptors 5, 6, ...: a sandbox wrapper's (a session's namespaces).
    ``sinks`` (stdout's, stderr's) take the output as it comes, for a caller that reads it while the command
    runs (a background command); else each stream gets a ``CappedText`` of ``output_cap``. ``stdin_fd`` (left
    open, the caller's: a background command's pipe) is the command's stdin; without it stdin is /dev/null.
    """
    if why := too_long(argv, env):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The command cannot be started: {why}.",
            "Put the long part in a file (write_file) and have a shorter command read it.",
        )
    dir_fd = _open_start(cwd) if cwd_fd is None else cwd_fd
    watching = (output_cap, max_output_bytes, on_progress, progress_interval)
    run = _send(argv, env, limits, dir_fd, cwd_fd, prelude, report_cwd, extra_fds, watching, sinks, stdin_fd)
    outcome = await _follow(run, timeout, kill_grace, retry)
    if outcome.untaken:  # our end of the request is closed: no keeper of it starts the command now, late or not
        run.launcher.kill()
        Launcher.forget(run.launcher)
    if outcome.lost:
        Launcher.forget(run.launcher)
        return await run_contained(
            argv, cwd=cwd, cwd_fd=cwd_fd, env=env, timeout=timeout, limits=limits, output_cap=output_cap,
            max_output_bytes=max_output_bytes, kill_grace=kill_grace, report_cwd=report_cwd, prelude=prelude,
            on_progress=on_progress, progress_interval=progress_interval, retry=False, extra_fds=extra_fds,
            sinks=sinks, stdin_fd=stdin_fd,
        )  # fmt: skip
    if outcome.unstarted is not None:
        raise outcome.unstarted
    return _result(run, outcome, limits)


@dataclass
class _Sent:
    """A request on its way: the keeper that takes it, the wait over its pipes, what it reports at the end."""

    launcher: Launcher
    keeper: Keeper
    watch: Watch
    pipes: tuple[int, int]  # our ends of stdout and stderr
    read_fd: int  # the final directory's pipe, or -1
    counted_by_cgroup: bool
    started: float


@dataclass
class _Outcome:
    timed_out: bool = False
    untaken: bool = False  # no keeper took it in time: nothing ran, the launcher is replaced
    lost: bool = False  # lost with a killed launcher: nothing ran, asked again once
    unstarted: ToolError | None = None
    final_cwd: str | None = None


def _send(
    argv: Sequence[str],
    env: Mapping[str, str],
    limits: Limits,
    dir_fd: int,
    cwd_fd: int | None,
    prelude: bool,
    report_cwd: bool,
    extra_fds: Sequence[int],
    watching: tuple[int, int, Callable[[float, str], None] | None, float],
    sinks: tuple[CappedText, CappedText] | None = None,
    stdin_fd: int | None = None,
) -> _Sent:
    """Make the command's pipes and status socket and hand the request to the launcher (its keepers take it)."""
    output_cap, max_output_bytes, on_progress, progress_interval = watching
    child_env = dict(env)
    base = PidsCgroup.base() if limits.max_processes else None
    nproc = None
    if limits.max_processes and base is None and os.getuid() != 0:
        nproc = _user_process_count() + limits.max_processes
    if prelude and (args := limits.ulimit_args(nproc)):
        child_env["__TOOLRIG_ULIMITS"] = args
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # both ways: status, and T/K
    fds = [out_w, err_w, status_w.detach(), dir_fd]
    read_fd = -1
    if prelude and report_cwd:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        fds.append(write_fd)
    if stdin_fd is not None:
        fds.append(os.dup(stdin_fd))  # the caller keeps its own, as for extra_fds
    fds.extend(os.dup(fd) for fd in extra_fds)  # the caller keeps its own; these copies go with the request
    request = {
        "argv": list(argv),
        "env": child_env,
        "prelude": prelude,
        "pids_max": limits.max_processes + 1 if limits.max_processes and base else None,  # + 1: the keeper
        "count_limit": limits.max_processes if limits.max_processes and not base else None,
        "extra_fds": len(extra_fds),
        "stdin": stdin_fd is not None,
    }
    started = time.perf_counter()
    keeper = Keeper(status_r.detach())
    # Everything the wait needs is made before the request goes: the keeper that wakes may take this CPU at once,
    # and what is left to do after the send then runs late and cold.
    streams = (
        ((out_r, sinks[0]), (err_r, sinks[1]))
        if sinks
        else ((out_r, CappedText(output_cap)), (err_r, CappedText(output_cap)))
    )
    watch = Watch(keeper, *streams, max_output_bytes, on_progress, progress_interval, started)
    try:
        launcher = Launcher.send(request, fds)
    except OSError as exc:
        watch.close()
        for fd in (out_r, err_r, read_fd):
            if fd >= 0:
                os.close(fd)
        keeper.close()
        raise _unstartable(exc) from None
    finally:
        for fd in fds:
            if fd != cwd_fd:
                os.close(fd)
    return _Sent(launcher, keeper, watch, (out_r, err_r), read_fd, bool(request["pids_max"]), started)


async def _follow(run: _Sent, timeout: float | None, kill_grace: float, retry: bool) -> _Outcome:  # noqa: ASYNC109
    """Wait for the command's end (or its time), stop what is left of it, and close what the wait used."""
    keeper, watch = run.keeper, run.watch
    outcome = _Outcome()
    try:
        await _wait(run, timeout, outcome)
        if not keeper.closed:  # stopped early (an output flood): what the keeper said so far, its start included
            keeper.read_ready()
        # A launcher killed while a keeper of it was busy lives on as a socket until that keeper is done: a request
        # sent meanwhile is lost with it, unread. Nothing ran: start a new launcher and ask again, once.
        if not outcome.untaken and not keeper.pid and keeper.error is None and retry:
            outcome.lost = run.launcher.gone() or await anyio.to_thread.run_sync(run.launcher.gone, _LOST_WAIT)
        if outcome.untaken:
            waited = f"{timeout:g} s and {_START_SECONDS:g} s more" if timeout is not None else f"{_START_SECONDS:g} s"
            outcome.unstarted = ToolError(
                ErrorType.UNAVAILABLE,
                f"The command did not start: no keeper took it in {waited} (the launcher was stopped, or its keepers "
                "killed, perhaps by an earlier command). It was not run; the launcher was replaced.",
                "Run the command again.",
            )
        elif not outcome.lost:
            await _end(watch, outcome, kill_grace)
    finally:
        if not _stopped(keeper):  # cancelled, or failed on the way: end it all before we go
            with anyio.CancelScope(shield=True):
                await _stop(watch, min(kill_grace, 1.0))
        try:
            watch.close()
            keeper.close()
            for fd in run.pipes:
                os.close(fd)
        finally:
            if run.read_fd >= 0:
                outcome.final_cwd = _read_cwd(run.read_fd)
    return outcome


async def _wait(run: _Sent, timeout: float | None, outcome: _Outcome) -> None:  # noqa: ASYNC109
    """Until the keeper is done or the time is up; a command not yet started when it is gets its start waited for."""
    keeper, watch = run.keeper, run.watch
    wait = timeout if timeout is not None else _START_SECONDS  # with no timeout, look whether it started
    while True:
        with anyio.move_on_after(wait) as scope:
            # an output flood stops the wait as well as the command
            await watch.until(lambda: keeper.finished() or watch.stopped is not None)
        if not scope.cancelled_caught:
            return
        keeper.read_ready()  # what the keeper said so far: its start is not read until needed
        wait = timeout if timeout is not None else math.inf
        if keeper.has_started():
            if timeout is None:
                continue
            outcome.timed_out = True
            return
        # Not started when the time was up (a request lost with a killed launcher, or a launcher that is slow to
        # answer): the time counts from the command's start, as it always did; wait for that first, bounded.
        watch.hear_every_line(True)
        with anyio.move_on_after(_START_SECONDS):
            await watch.until(keeper.has_started)
        watch.hear_every_line(False)
        if not keeper.has_started():  # nothing reads requests (a stopped launcher with no keeper left)
            outcome.untaken = True
            keeper.abandon()
            return
        if not keeper.pid:
            return


async def _end(watch: Watch, outcome: _Outcome, kill_grace: float) -> None:
    """After the wait: stop what is left of a started command and read what it wrote; or say why it never ran."""
    keeper = watch.keeper
    # A keeper gone without a word whose command wrote output did start it: the command killed its keeper
    # before the keeper could say P (the spawned child may run first); the launcher kills what is left.
    ran = keeper.error is None and bool(watch.out.bytes_seen or watch.err.bytes_seen)
    if not keeper.pid and not ran and (keeper.error is not None or keeper.closed):
        reason = keeper.error or "the launcher stopped before it started the command"
        outcome.unstarted = ToolError(ErrorType.UNAVAILABLE, f"Could not start the command: {reason}.")
        return
    if outcome.timed_out:
        watch.stopped = "timeout"
    await _stop(watch, kill_grace)
    if watch.streams and keeper.exit_code is not None:
        watch.drain()  # X: every process of the command is gone, and all it wrote is in the pipes
    elif watch.streams:  # a keeper that did not say X: whatever is left may still write
        with anyio.move_on_after(_DRAIN_SECONDS):
            await watch.until(lambda: not watch.streams)


def _result(run: _Sent, outcome: _Outcome, limits: Limits) -> ProcessResult:
    keeper, watch = run.keeper, run.watch
    watch.out.close()
    watch.err.close()
    if keeper.over_limit and watch.stopped is None:
        watch.stopped = f"process limit ({limits.max_processes} processes)"
    if keeper.exit_code is None and watch.stopped is None and not outcome.timed_out:  # it never said X: it died
        watch.stopped = "its keeper ended before the command did (killed?); everything the command started was killed"
    return ProcessResult(
        stdout=watch.out.text(),
        stderr=watch.err.text(),
        exit_code=keeper.exit_code,
        timed_out=outcome.timed_out,
        duration_ms=(time.perf_counter() - run.started) * 1000,
        final_cwd=outcome.final_cwd,
        stopped=watch.stopped,
        containment=containment(limits, keeper.cgroup if run.counted_by_cgroup else None),
    )


def _open_start(cwd: Path) -> int:
    """A descriptor for the directory to start in, for a caller that brought none (it follows symlinks).

    ``O_PATH``: the keeper only ``fchdir``s to it, and a directory that may be searched but not listed can be entered.
    """
    try:
        return os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(
            ErrorType.NOT_FOUND, f"'{cwd}' is not a directory (any more).", "Start it in a directory that exists."
        ) from None
    except OSError as exc:
        raise ToolError(ErrorType.UNAVAILABLE, f"Could not open '{cwd}' to start in: {exc.strerror or exc}.") from None


def _stopped(keeper: Keeper) -> bool:
    """Whether ``_stop`` has nothing left to do: the command is over and no cgroup of a dead keeper is left."""
    cgroup_left = keeper.cgroup is not None and not keeper.cgroup_removed and keeper.exit_code is None
    return keeper.exited_flag and keeper.finished() and not cgroup_left


async def _stop(watch: Watch, grace: float) -> None:
    """End the process tree.

    SIGTERM to the command's group and ``grace`` seconds if the leader still runs; then the keeper kills
    everything below it (SIGUSR1) and closes its status pipe. A keeper that does not answer (a command may
    stop or kill it) is killed; the cgroup, where there is one, is emptied last. Output is read meanwhile: a
    command may have more to write before it can end.
    """
    keeper = watch.keeper
    if not keeper.exited_flag:
        keeper.signal(signal.SIGTERM)
        with anyio.move_on_after(grace):
            await watch.until(lambda: keeper.exited_flag)
    if not keeper.finished():
        keeper.signal(signal.SIGUSR1)  # after the leader's exit (X) the keeper has ended the rest by itself
        with anyio.move_on_after(_KEEPER_SECONDS):
            await watch.until(keeper.finished)
    if not keeper.finished():
        log.warning("the keeper of pid %s did not answer; killing it", keeper.leader)
        keeper.signal(signal.SIGKILL)
        if keeper.leader > 0:  # killpg(0) would be our own process group
            with contextlib.suppress(OSError):
                os.killpg(keeper.leader, signal.SIGKILL)
        with anyio.move_on_after(_KEEPER_SECONDS):
            await watch.until(keeper.finished)
    # A keeper that answered lives on in its cgroup, ready for the next command: it has ended everything of this
    # one itself. Only a dead keeper's cgroup may still hold what it kept (a command may kill or stop its keeper).
    # One that said X had ended everything of the command: should it die later, its launcher (or, with the launcher
    # gone, the keeper itself) removes its cgroup.
    if keeper.cgroup is not None and not keeper.cgroup_removed and keeper.exit_code is None:
        if keeper.pidfd is not None:  # it did not answer: it is dead or dying
            with anyio.move_on_after(_KEEPER_SECONDS):
                await anyio.wait_readable(keeper.pidfd)
        if keeper.dead():
            keeper.cgroup_removed = await keeper.cgroup.kill_all()


_KEEPER_SECONDS = 3.0


def _read_cwd(fd: int) -> str | None:
    try:
        data = os.read(fd, 65536)
    except (BlockingIOError, OSError):
        data = b""
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="surrogateescape")
    return text or None


def _unstartable(exc: OSError) -> ToolError:
    """Why no command can start, said so that the user can fix it: a file this user may not run is no retry.

    The launcher is toolrig's own interpreter running ``launcher.py``; when this user cannot execute or read it
    (toolrig installed under another user's home, as root's pyenv under a 0700 ``/root``), every command fails
    the same way, so "retry later" would be wrong and the file must be named.
    """
    where = f" ({exc.filename})" if exc.filename else ""
    if isinstance(exc, PermissionError | FileNotFoundError):
        return ToolError(
            ErrorType.UNAVAILABLE,
            f"Could not start the command: {exc.strerror or exc}{where}; toolrig's interpreter is {sys.executable}.",
            "Tell the user: toolrig cannot start commands as this user (a file it runs is not accessible to it); "
            "install toolrig where this user can run it. Retrying will not help.",
            retryable=False,
        )
    return ToolError(ErrorType.UNAVAILABLE, f"Could not start the command: {exc.strerror or exc}{where}.")
