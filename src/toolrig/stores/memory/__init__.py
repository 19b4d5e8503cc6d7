"""Memory search: an SQLite FTS5 index per memory root, under ``.toolrig/memory/``."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from toolrig.stores.memory.index import MemoryHit, MemoryIndex, RefreshReport, memory_files
from toolrig.stores.memory.progress import TerminalProgress

__all__ = [
    "MemoryHit",
    "MemoryIndex",
    "MemoryIndexes",
    "RefreshReport",
    "TerminalProgress",
    "WriteLock",
    "memory_files",
]

_SCOPE = re.compile(r"^[A-Za-z0-9_.@-]{1,128}$")


class MemoryIndexes:
    """The open indexes of one workspace, one per scope (the workspace's own, or one per agent)."""

    def __init__(self, directory: Path, *, semantic: bool = False) -> None:
        self.directory = directory
        self.semantic = semantic
        self._open: dict[str, MemoryIndex] = {}
        self._lock = threading.Lock()
        self.write_lock = WriteLock(directory / "write.lock")

    def index(self, root: Path, scope: str) -> MemoryIndex:
        if not _SCOPE.match(scope) or scope.startswith("."):
            raise ValueError(f"invalid memory scope {scope!r}")
        with self._lock:
            found = self._open.get(scope)
            if found is None or found.root != root:
                found = MemoryIndex(root, self.directory / f"{scope}.sqlite", semantic=self.semantic)
                self._open[scope] = found
            return found

    def close(self) -> None:
        with self._lock:
            for index in self._open.values():
                index.close()
            self._open.clear()


class WriteLock:
    """Serialises read-modify-write of memory files across threads and processes (``fcntl`` lock file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.Lock()
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        import fcntl
        import os

        self._thread_lock.acquire()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None
        self._thread_lock.release()
