"""Process limits of a command: ulimits, and the pids cgroup a keeper joins where the kernel offers one.

Part of ``process`` (its trust model applies).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio

log = logging.getLogger("toolrig.sandbox.process")


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
    """A pids cgroup per keeper (so per running command), where the kernel offers one.

    The launcher makes one for each keeper, which joins it once and keeps command after command in it (the join
    is the slow part); toolrig empties and removes it only if the keeper died. It caps forks (root ignores
    RLIMIT_NPROC) and finds every process the command left behind, including those that left its session or
    process group.
    """

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
    def forget_spares(cls, launcher_pid: int | None) -> None:
        """Remove the empty cgroups a dead launcher's idle spares left behind (by name: ours, and that launcher's).

        Only that launcher's: a new one, started by another thread meanwhile, has made empty cgroups of its
        own that its keepers are about to join; removing those would leave a keeper with no cgroup.
        """
        base = cls.base()
        if base is None or launcher_pid is None:
            return
        for path in base.glob(f"toolrig-spare-{os.getpid()}-{launcher_pid}-*"):
            with contextlib.suppress(OSError):
                path.rmdir()

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    async def kill_all(self) -> bool:
        """SIGKILL everything in the cgroup until it is empty, then remove it (bounded: ~2 s); True once gone."""
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
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


@functools.lru_cache(maxsize=64)
def _command_cgroup(reported: str, owner: int) -> PidsCgroup | None:
    """The cgroup a keeper says its command runs in, if it is one a spare of ours made (toolrig kills all in it).

    Kept per name (a keeper reports the same one for command after command) and per process (``owner``, our pid:
    a fork judges again, under its own pid). ``PidsCgroup`` holds only the path.
    """
    base = PidsCgroup.base()
    parent, _, name = reported.rpartition("/")
    if base is None or parent != str(base) or not name.startswith(f"toolrig-spare-{owner}-"):
        return None
    return PidsCgroup(Path(reported))


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
