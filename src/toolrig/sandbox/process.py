"""Running a child process for a tool: contained, killable, with bounded output and a scrubbed environment.

Trust model: the command is hostile. It runs in its own session and process group (and, where the kernel
lets us, its own pids cgroup), under resource limits set in the child before the command starts, with an
environment stripped of secrets; on timeout, cancellation or when it finishes, everything it started dies.
"""

from __future__ import annotations

import codecs
import contextlib
import fnmatch
import functools
import itertools
import logging
import math
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from toolrig.errors import ErrorType, ToolError

log = logging.getLogger("toolrig.sandbox.process")

DEFAULT_ENV_ALLOW = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR", "HOSTNAME",
)  # fmt: skip
# A glob never lets these through; naming the variable exactly in the allowlist does.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE", re.IGNORECASE)

# CSI, OSC, string sequences (DCS, SOS, PM, APC) and the two-character escapes that introduce none of them.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-OQ-WYZ\\])")
_CARRY_LIMIT = 256
_READ_SIZE = 65536
_DRAIN_SECONDS = 1.0

# Read by bash from $BASH_ENV before the command: join the cgroup, set limits, report the final directory.
_PRELUDE = """\
if [ -n "${__TOOLRIG_CGROUP-}" ]; then builtin echo $$ > "$__TOOLRIG_CGROUP" || builtin exit 126; fi
if [ -n "${__TOOLRIG_ULIMITS-}" ]; then builtin ulimit $__TOOLRIG_ULIMITS || builtin exit 126; fi
if [ -n "${__TOOLRIG_CWD_FD-}" ]; then
  builtin trap 'builtin printf "%s" "$PWD" >&'"$__TOOLRIG_CWD_FD"' 2>/dev/null' EXIT
fi
builtin unset BASH_ENV __TOOLRIG_CGROUP __TOOLRIG_ULIMITS __TOOLRIG_CWD_FD
"""


# ------------------------------------------------------------------------------------------ output


class CappedText:
    """Decoded, ANSI-free text of a stream, keeping only its head and tail: memory stays bounded.

    What falls between is counted, and ``text()`` puts a marker saying how much was dropped in its place.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.dropped = 0
        self.bytes_seen = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._carry = ""

    def feed(self, data: bytes) -> None:
        self.bytes_seen += len(data)
        self._add(self._clean(self._decoder.decode(data)))

    def close(self) -> None:
        rest = self._carry + self._decoder.decode(b"", final=True)
        self._carry = ""
        self._add(_ANSI.sub("", rest).replace("\x1b", ""))

    def _clean(self, text: str) -> str:
        text = self._carry + text
        self._carry = ""
        cut = text.rfind("\x1b")
        if cut >= 0 and len(text) - cut < _CARRY_LIMIT and _ANSI.match(text, cut) is None:
            text, self._carry = text[:cut], text[cut:]  # an escape sequence split across reads
        return _ANSI.sub("", text).replace("\x1b", "") if "\x1b" in text else text

    def _add(self, text: str) -> None:
        if not text:
            return
        room = self._head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
            if not text:
                return
        if len(text) >= self._tail_cap:
            self.dropped += self._tail_len + len(text) - self._tail_cap
            self._tail = deque([text[-self._tail_cap :]])
            self._tail_len = self._tail_cap
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_cap:
            first = self._tail[0]
            excess = self._tail_len - self._tail_cap
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_len -= len(first)
                self.dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_len -= excess
                self.dropped += excess

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped:,} characters dropped from the middle ...]\n{tail}"


# ------------------------------------------------------------------------------------------ environment


def scrub_env(
    environ: Mapping[str, str], allow: Sequence[str] = DEFAULT_ENV_ALLOW, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables a child may see: those the allowlist names, never a secret-looking one by glob."""
    exact, globbed = _env_matcher(tuple(allow))
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in exact or (globbed.match(name) and not SECRET_NAME.search(name)):
            env[name] = value
    env.update(extra or {})
    return env


@functools.lru_cache(maxsize=64)
def _env_matcher(allow: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str]]:
    globs = [fnmatch.translate(p) for p in allow if any(ch in p for ch in "*?[")] or ["(?!)"]
    return frozenset(allow), re.compile("|".join(globs))


# ------------------------------------------------------------------------------------------ limits


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_seconds: int | None = None
    memory_mb: int | None = None  # address space
    max_processes: int | None = None
    file_size_mb: int | None = None

    def ulimit_args(self, nproc: int | None) -> str:
        parts = []
        if self.cpu_seconds:
            parts.append(f"-t {int(self.cpu_seconds)}")
        if self.memory_mb:
            parts.append(f"-v {int(self.memory_mb) * 1024}")
        if self.file_size_mb:
            parts.append(f"-f {int(self.file_size_mb) * 1024}")  # bash counts 1024-byte blocks
        if nproc:
            parts.append(f"-u {nproc}")
        return " ".join(parts)


class PidsCgroup:
    """A pids cgroup per command, where the kernel offers one.

    It caps forks (root ignores RLIMIT_NPROC) and finds every process the command left behind, including
    those that left its session or process group.
    """

    _counter = itertools.count(1)
    _base: Path | None = None
    _probed = False
    _lock = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def base(cls) -> Path | None:
        with cls._lock:
            if not cls._probed:
                cls._base = _find_pids_hierarchy()
                cls._probed = True
            return cls._base

    @classmethod
    def create(cls, max_processes: int) -> PidsCgroup | None:
        base = cls.base()
        if base is None:
            return None
        path = base / f"toolrig-{os.getpid()}-{next(cls._counter)}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(max_processes))
        except OSError as exc:
            log.debug("no pids cgroup for this command: %s", exc)
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path)

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    async def kill_all(self) -> None:
        """SIGKILL everything in the cgroup until it is empty, then remove it (bounded: ~2 s)."""
        for _ in range(400):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.005)
        else:
            log.warning("processes still alive in %s after SIGKILL", self.path)
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _find_pids_hierarchy() -> Path | None:
    """Our own pids cgroup directory if we may create children in it (v1 pids, or delegated v2)."""
    if os.environ.get("TOOLRIG_NO_CGROUP"):
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            candidate = Path("/sys/fs/cgroup/pids") / path.lstrip("/")
            exists = (candidate / "pids.max").exists() or candidate == Path("/sys/fs/cgroup/pids")
            if exists and os.access(candidate, os.W_OK):
                return candidate
        if controllers == "" and path:
            candidate = Path("/sys/fs/cgroup") / path.lstrip("/")
            try:
                delegated = "pids" in (candidate / "cgroup.subtree_control").read_text().split()
            except OSError:
                delegated = False
            if delegated and os.access(candidate, os.W_OK):
                return candidate
    return None


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


_prelude_lock = threading.Lock()
_prelude_path: Path | None = None


def prelude_file() -> Path:
    """The BASH_ENV script, written once per process into a private directory."""
    global _prelude_path
    with _prelude_lock:
        if _prelude_path is None or not _prelude_path.exists():
            directory = Path(tempfile.mkdtemp(prefix="toolrig-"))
            path = directory / "prelude.bash"
            path.write_text(_PRELUDE)
            _prelude_path = path
        return _prelude_path


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


class Child:
    """A started process, awaited without threads.

    A pidfd says when it exits, so the group can still be signalled while the exited leader holds its pid
    (no pid-reuse race), and only then is it reaped.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(popen.pid)

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def exited(self) -> None:
        """Wait until the process has exited (it stays unreaped until ``reap``)."""
        if self.pidfd is not None:
            await anyio.wait_readable(self.pidfd)
        else:  # pragma: no cover - kernels before 5.3
            await anyio.to_thread.run_sync(self.popen.wait, abandon_on_cancel=True)

    def has_exited(self) -> bool:
        if self.popen.returncode is not None:
            return True
        if self.pidfd is not None:
            import select

            return bool(select.select([self.pidfd], [], [], 0)[0])
        return self.popen.poll() is not None  # pragma: no cover

    def signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def reap(self) -> None:
        if self.has_exited():
            self.popen.wait()

    def close(self) -> None:
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


@dataclass
class _Run:
    child: Child
    out: CappedText
    err: CappedText
    max_output_bytes: int
    stopped: str | None = None
    flooded: anyio.Event = field(default_factory=anyio.Event)


async def run_contained(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,  # noqa: ASYNC109 - the process is killed at the deadline, not just abandoned
    limits: Limits = Limits(),
    output_cap: int = 50_000,
    max_output_bytes: int = 64 * 1024 * 1024,
    kill_grace: float = 2.0,
    report_cwd: bool = False,
    prelude: bool = True,
    on_progress: Callable[[float, str], None] | None = None,
    progress_interval: float = 1.0,
) -> ProcessResult:
    """Run ``argv`` contained; the caller's cancellation kills the whole process tree before it propagates.

    With ``prelude`` the child must be bash: it joins the cgroup and applies the limits itself before the
    command starts, and with ``report_cwd`` says where it finished. ``on_progress(seconds, message)`` is
    called every ``progress_interval`` seconds while the command runs (MCP clients show it).
    """
    child_env = dict(env)
    cgroup: PidsCgroup | None = None
    read_fd = write_fd = -1
    if prelude:
        nproc: int | None = None
        if limits.max_processes:
            cgroup = PidsCgroup.create(limits.max_processes)
            if cgroup is None and os.getuid() != 0:
                nproc = _user_process_count() + limits.max_processes
        child_env["BASH_ENV"] = str(prelude_file())
        if cgroup is not None:
            child_env["__TOOLRIG_CGROUP"] = cgroup.procs_file
        if args := limits.ulimit_args(nproc):
            child_env["__TOOLRIG_ULIMITS"] = args
        if report_cwd:
            read_fd, write_fd = os.pipe()
            os.set_blocking(read_fd, False)
            child_env["__TOOLRIG_CWD_FD"] = str(write_fd)
    started = time.perf_counter()
    try:
        # Popen in the loop thread: fork/exec takes about as long as a thread hop would, and the pipes and
        # the pidfd are then awaited without any helper thread.
        popen = subprocess.Popen(  # noqa: S603, ASYNC220 - argv comes from the caller; no shell here
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=child_env,
            start_new_session=True,
            pass_fds=(write_fd,) if write_fd >= 0 else (),
        )
    except OSError as exc:
        if read_fd >= 0:
            os.close(read_fd)
        if cgroup is not None:
            await cgroup.kill_all()
        raise ToolError(ErrorType.UNAVAILABLE, f"Could not start the command: {exc.strerror or exc}.") from None
    finally:
        if write_fd >= 0:
            os.close(write_fd)
    child = Child(popen)
    run = _Run(child, CappedText(output_cap), CappedText(output_cap), max_output_bytes)
    timed_out = False
    final_cwd: str | None = None
    try:
        async with anyio.create_task_group() as group:
            done = [anyio.Event(), anyio.Event()]
            if popen.stdout is None or popen.stderr is None:  # pragma: no cover - both are always pipes
                raise RuntimeError("the process has no output pipes")
            group.start_soon(_pump, popen.stdout.fileno(), run.out, run, done[0])
            group.start_soon(_pump, popen.stderr.fileno(), run.err, run, done[1])
            if on_progress is not None:
                group.start_soon(_tick, on_progress, progress_interval, run, started)
            with anyio.move_on_after(timeout if timeout is not None else math.inf) as scope:
                async with anyio.create_task_group() as waiters:
                    waiters.start_soon(_cancel_on, run.flooded, waiters.cancel_scope)
                    await child.exited()
                    waiters.cancel_scope.cancel()
            if scope.cancelled_caught:
                timed_out = True
                run.stopped = "timeout"
            await _stop(child, kill_grace, cgroup)
            with anyio.move_on_after(_DRAIN_SECONDS):
                for event in done:
                    await event.wait()
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(child, min(kill_grace, 1.0), cgroup)
            child.close()
            if read_fd >= 0:
                final_cwd = _read_cwd(read_fd)
    run.out.close()
    run.err.close()
    return ProcessResult(
        stdout=run.out.text(),
        stderr=run.err.text(),
        exit_code=child.returncode,
        timed_out=timed_out,
        duration_ms=(time.perf_counter() - started) * 1000,
        final_cwd=final_cwd,
        stopped=run.stopped,
    )


async def _tick(report: Callable[[float, str], None], interval: float, run: _Run, started: float) -> None:
    """Say how long the command has run and how much it wrote, until the task group ends."""
    while True:
        await anyio.sleep(interval)
        elapsed = time.perf_counter() - started
        written = run.out.bytes_seen + run.err.bytes_seen
        report(elapsed, f"running for {elapsed:.0f} s; {written:,} bytes of output so far")


async def _cancel_on(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _pump(fd: int, sink: CappedText, run: _Run, done: anyio.Event) -> None:
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            except OSError:
                break
            if not chunk:
                break
            sink.feed(chunk)
            if sink.bytes_seen > run.max_output_bytes and run.stopped is None:
                run.stopped = f"output limit ({run.max_output_bytes:,} bytes on one stream)"
                run.flooded.set()
                run.child.signal_group(signal.SIGKILL)
    finally:
        done.set()


async def _stop(child: Child, grace: float, cgroup: PidsCgroup | None) -> None:
    """End the process tree.

    SIGTERM and ``grace`` seconds if the leader still runs, then SIGKILL for the whole group (and cgroup)
    while the exited leader still holds its pid, then reap it.
    """
    if child.returncode is None and not child.has_exited():
        child.signal_group(signal.SIGTERM)
        with anyio.move_on_after(grace):
            await child.exited()
    child.signal_group(signal.SIGKILL)
    if child.returncode is None:
        await child.exited()
        child.reap()
    if cgroup is not None:
        await cgroup.kill_all()


def _read_cwd(fd: int) -> str | None:
    try:
        data = os.read(fd, 65536)
    except (BlockingIOError, OSError):
        data = b""
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="surrogateescape")
    return text or None
