"""Background commands: run_command's processes that outlive the call that started them, owned by one run.

A ``BackgroundJobs`` is made by a consumer that lives long enough to own a process (an agent run, and so chat,
the gateway and durable tasks) and travels to the tools in the call's scope, never kept on the Rig: only the
calls of that run can read, list or stop its commands, and when the run ends (or is cancelled, or its Rig
closes under it) every command it started is stopped. Each command runs through ``run_contained`` exactly as a
foreground one (the launcher's keeper, the sandbox view, the egress proxy), in a task of the owner's task group;
stopping it cancels that task, and ``run_contained``'s own cleanup ends the whole tree (SIGTERM, grace, then
SIGKILL of everything under it). Should toolrig itself die (kill -9), the launcher and keepers end the trees.

Each command reads a pipe as its stdin (a foreground one reads /dev/null): ``Job.send`` writes to it without ever
waiting, so a command that does not read cannot hold toolrig up; a full pipe is answered, not waited on.

Trust model: the commands are hostile (see ``process``); their output is kept bounded per stream (the newest
``keep_chars`` characters, read by offset), and the count, lifetime and output limits hold per owner.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.capped import CappedText
from toolrig.sandbox.process import ProcessResult


class Tap(CappedText):
    """A stream's output as it comes: the newest ``keep`` characters, readable from an offset while it runs."""

    def __init__(self, keep: int, on_data: Callable[[], None]) -> None:
        super().__init__(cap=1_000)  # the head and tail a finished result would show; reads use the ring below
        self.keep = keep
        self.on_data = on_data  # fed on the event loop's thread (command_watch.Watch): may set an event
        self._ring: deque[str] = deque()
        self._ring_len = 0
        self.total = 0  # characters seen (decoded, escapes removed): offsets count these

    def _add(self, text: str) -> None:
        super()._add(text)
        if not text:
            return
        self._ring.append(text)
        self._ring_len += len(text)
        self.total += len(text)
        self.on_data()
        while self._ring_len - len(self._ring[0]) >= self.keep:
            self._ring_len -= len(self._ring.popleft())

    def since(self, offset: int, limit: int) -> tuple[str, int, int]:
        """(text after ``offset``, at most ``limit`` characters; the offset it reaches; characters lost before it)."""
        start = self.total - self._ring_len  # the offset of the ring's first character
        lost = max(0, start - offset)
        offset = max(offset, start)
        text = "".join(self._ring)[offset - start :]
        return text[:limit], offset + min(len(text), limit), lost


@dataclass(frozen=True, slots=True)
class JobLimits:
    max_jobs: int = 10  # running at once, per owner
    keep_chars: int = 1_000_000  # per stream
    lifetime_seconds: float | None = 3600.0


@dataclass
class Job:
    id: str
    command: str
    agent_id: str | None
    keep: int
    call_id: str = ""  # the run_command call that started it (its audit row)
    session_id: str | None = None
    out: Tap = field(init=False)
    err: Tap = field(init=False)
    news: anyio.Event = field(default_factory=anyio.Event)  # set when output arrives or the command ends
    started: float = field(default_factory=time.time)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    result: ProcessResult | None = None
    error: str | None = None
    stopped_by: str | None = None
    read_out: int = 0
    read_err: int = 0
    stdin_r: int = -1  # the command's stdin (toolrig's copy, held until the command is over)
    stdin_w: int = -1  # what send writes to (non-blocking); -1 once closed (close: true, or the command ended)

    def __post_init__(self) -> None:
        self.out = Tap(self.keep, self._news)
        self.err = Tap(self.keep, self._news)

    def _news(self) -> None:
        self.news.set()

    def unread(self) -> bool:
        return self.read_out < self.out.total or self.read_err < self.err.total

    @property
    def status(self) -> str:
        if not self.done.is_set():
            return "running"
        if self.error is not None:
            return "failed"
        if self.stopped_by is not None:
            return "stopped"
        return "exited"

    def row(self) -> dict[str, Any]:
        result = self.result
        return {
            "id": self.id,
            "command": self.command,
            "status": self.status,
            "exit_code": result.exit_code if result is not None else None,
            "stopped": self.stopped_by or (result.stopped if result is not None else None),
            "error": self.error,
            "running_seconds": round(time.time() - self.started, 1),
        }


Runner = Callable[[Tap, Tap, int], Awaitable[ProcessResult]]  # stdout's and stderr's taps, the stdin pipe
ENDED = "the run or session that owned it ended"


class BackgroundJobs:
    """The background commands of one owner (an agent run): start, read, stop, list; all stopped at its end."""

    def __init__(
        self, tasks: TaskGroup, limits: JobLimits | None = None, on_end: Callable[[Job], None] | None = None
    ) -> None:
        self._tasks = tasks
        self.limits = limits or JobLimits()
        self.on_end = on_end  # the owner's audit: one row when a command ends, however it ends
        self._jobs: dict[str, Job] = {}
        self._count = 0
        self.closed = False

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls, limits: JobLimits | None = None, on_end: Callable[[Job], None] | None = None
    ) -> AsyncIterator[BackgroundJobs]:
        """The owner's jobs for the length of the ``async with``; leaving it stops every one still running."""
        async with anyio.create_task_group() as tasks:
            jobs = cls(tasks, limits, on_end)
            try:
                yield jobs
            finally:
                jobs.closed = True
                for job in jobs._jobs.values():
                    if not job.done.is_set() and job.stopped_by is None:
                        job.stopped_by = ENDED
                tasks.cancel_scope.cancel()  # each job's task ends its process tree on the way out

    def start(self, command: str, agent_id: str | None, run: Runner, cleanup: Callable[[], None], **labels: Any) -> Job:
        """Start ``run`` (the contained command) in a task; refused past the limit or once the owner ended."""
        if self.closed:
            cleanup()
            raise ToolError(ErrorType.UNAVAILABLE, "This run has ended; it can start no background command.")
        running = [j for j in self._jobs.values() if not j.done.is_set()]
        if len(running) >= self.limits.max_jobs:
            cleanup()
            raise ToolError(
                ErrorType.RATE_LIMITED,
                f"{len(running)} background commands are running, the most this run may have at once "
                f"({self.limits.max_jobs}).",
                "Stop one you no longer need (stop_command, or list_commands to see them), then start this again.",
                retryable=False,
            )
        try:
            stdin = os.pipe()  # close-on-exec: only the keeper passes the read end on, as the command's fd 0
        except OSError as exc:  # out of descriptors
            cleanup()
            raise ToolError(ErrorType.UNAVAILABLE, f"No pipe for its input: {exc.strerror or exc}.") from None
        os.set_blocking(stdin[1], False)
        self._count += 1
        job = Job(f"bg{self._count}", command, agent_id, self.limits.keep_chars, **labels)
        job.stdin_r, job.stdin_w = stdin
        self._jobs[job.id] = job
        self._tasks.start_soon(self._drive, job, run, cleanup)
        return job

    async def _drive(self, job: Job, run: Runner, cleanup: Callable[[], None]) -> None:
        try:
            with job.scope:
                job.result = await run(job.out, job.err, job.stdin_r)
            if job.scope.cancelled_caught and job.stopped_by is None:
                job.stopped_by = ENDED
        except ToolError as exc:
            job.error = exc.message
        finally:
            cleanup()
            _close_stdin(job)
            if job.stdin_r >= 0:
                os.close(job.stdin_r)
                job.stdin_r = -1
            job.done.set()
            job._news()
            if self.on_end is not None:
                with contextlib.suppress(Exception):  # the record of an end never keeps the others from ending
                    self.on_end(job)

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"No background command '{job_id[:40]}' in this run (its commands: {known}).",
                "Use an id run_command returned (list_commands shows them).",
            )
        return job

    async def read(self, job_id: str, limit: int, wait: float = 0.0) -> dict[str, Any]:
        """New output since the last read (bounded), with the command's status; ``wait``: seconds to wait for some."""
        job = self.get(job_id)
        if wait > 0 and not job.unread() and not job.done.is_set():
            job.news = anyio.Event()
            with anyio.move_on_after(wait):
                await job.news.wait()
        out, job.read_out, lost_out = job.out.since(job.read_out, limit)
        err, job.read_err, lost_err = job.err.since(job.read_err, limit)
        more = job.unread()
        return {**job.row(), "stdout": out, "stderr": err, "more": more, "dropped_chars": lost_out + lost_err}

    async def stop(self, job_id: str, why: str = "stopped on request") -> Job:
        """End the command and everything it started; returns once it is gone."""
        job = self.get(job_id)
        if not job.done.is_set():
            job.stopped_by = why
            job.scope.cancel()
            await job.done.wait()
        return job

    def rows(self) -> list[dict[str, Any]]:
        return [job.row() for job in self._jobs.values()]

    def send(self, job_id: str, text: str, close: bool) -> dict[str, Any]:
        """Write ``text`` to the command's stdin as far as its pipe takes it now (never waiting); ``close``: EOF."""
        job = self.get(job_id)
        if job.done.is_set() or job.stdin_w < 0:
            why = "its input was closed (close: true)" if not job.done.is_set() else f"it has {job.status}"
            raise ToolError(
                ErrorType.CONFLICT,
                f"Background command {job.id} reads no more input: {why}.",
                "Read what it wrote with command_output; start it again to give it new input.",
                retryable=False,
            )
        data = text.encode(errors="replace")  # a lone surrogate becomes '?', never an exception
        try:
            sent = _feed(job.stdin_w, data)
        except OSError as exc:  # EPIPE: the command and all it started closed their stdin
            _close_stdin(job)
            raise ToolError(
                ErrorType.CONFLICT,
                f"Background command {job.id} no longer reads its input ({exc.strerror or exc}); nothing was sent.",
                "Read what it wrote with command_output.",
                retryable=False,
            ) from None
        if data and not sent:
            raise ToolError(
                ErrorType.CONFLICT,
                f"Nothing was sent: background command {job.id}'s input pipe is full (it is not reading its input "
                "now).",
                "Read its output with command_output (wait_seconds) and send again once it has read; or stop it.",
            )
        closed = close and sent == len(data)
        if closed:
            _close_stdin(job)
        sent_chars = len(data[:sent].decode(errors="replace"))
        return {"id": job.id, "status": job.status, "sent_bytes": sent, "sent_chars": sent_chars,
                "unsent_chars": len(text) - sent_chars, "closed": closed}  # fmt: skip


def _feed(fd: int, data: bytes) -> int:
    """Write what the pipe takes now, in whole characters; the bytes written.

    Each write is at most ``PIPE_BUF`` bytes, which a non-blocking pipe takes whole or not at all (EAGAIN), and
    ends between two UTF-8 characters: what was sent is always a prefix of whole characters, to resend from.
    """
    sent = 0
    while sent < len(data):
        end = min(sent + select.PIPE_BUF, len(data))
        while end < len(data) and end > sent + 1 and data[end] & 0xC0 == 0x80:  # a continuation byte: cut before
            end -= 1
        chunk = data[sent:end]
        try:
            written = os.write(fd, chunk)
        except BlockingIOError:
            break
        sent += written
        if written < len(chunk):  # a short write (never for PIPE_BUF or less): what it took is all
            break
    return sent


def _close_stdin(job: Job) -> None:
    if job.stdin_w >= 0:
        os.close(job.stdin_w)
        job.stdin_w = -1


def owned_jobs(
    given: BackgroundJobs | None, on_end: Callable[[Job], None] | None = None
) -> contextlib.AbstractAsyncContextManager[BackgroundJobs]:
    """The caller's own owner when it passes one (it stops them itself), else a new one for this ``async with``."""
    return contextlib.nullcontext(given) if given is not None else BackgroundJobs.open(on_end=on_end)


STARTED = (
    "Started in the background: read its output with command_output, send it input with send_command_input, "
    "stop it with stop_command."
)


def start_job(
    jobs: BackgroundJobs | None,
    agent_id: str | None,
    command: str,
    run: Runner,
    cleanup: Callable[[], None],
    **labels: Any,
) -> Job:
    """Start a background command for the call's owner; refused where nothing lives long enough to own one."""
    if jobs is None:
        cleanup()
        raise ToolError(
            ErrorType.UNAVAILABLE,
            "background: true needs a caller that outlives this call (an agent run, chat, the MCP server); "
            "this one (a one-shot `toolrig call`, a direct Rig.call) would leave the command with no owner, so "
            "nothing was started.",
            "Run it without background (give it a timeout_seconds), or start it from `toolrig run` or `toolrig chat`.",
            retryable=False,
        )
    return jobs.start(command, agent_id, run, cleanup, **labels)
