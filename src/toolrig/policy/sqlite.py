"""One SQLite file under ``.toolrig/`` shared by every process working in a workspace.

Trust model: only toolrig writes these files (the workspace guard keeps tools out of ``.toolrig/``); other
processes of the same user share them, so every write is a short transaction that tolerates contention.

WAL mode lets readers run beside the writer. A write first tries on the caller's thread with no busy wait
(tens of microseconds, no thread hop); only if another process holds the write lock does it move to a
worker thread that waits and retries, so the event loop never blocks on a neighbour.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5_000
RETRY_SECONDS = 30.0


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteFile:
    """A database file with ordered migrations (``PRAGMA user_version``), opened on first use."""

    def __init__(self, path: Path, migrations: Sequence[str], *, synchronous: str = "NORMAL") -> None:
        self.path = path
        self.migrations = list(migrations)
        self.synchronous = synchronous
        self._fast: sqlite3.Connection | None = None  # busy_timeout 0, used by whoever gets _fast_lock
        self._slow: sqlite3.Connection | None = None  # waits on busy; used from worker threads
        self._fast_lock = threading.Lock()
        self._slow_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        weakref.finalize(self, _close_all, self._connections)

    def _connect(self, busy_ms: int) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=busy_ms / 1000)
        self._connections.append(conn)
        conn.execute(f"PRAGMA busy_timeout={busy_ms}")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        return conn

    def _open(self) -> tuple[sqlite3.Connection, sqlite3.Connection]:
        """(fast, slow), connecting and migrating on first use."""
        with self._open_lock:
            if self._fast is None or self._slow is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                slow = self._connect(BUSY_TIMEOUT_MS)
                _retry(lambda: slow.execute("PRAGMA journal_mode=WAL"))
                _retry(lambda: self._migrate(slow))
                self._slow = slow
                self._fast = self._connect(0)
            return self._fast, self._slow

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version >= len(self.migrations):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have migrated
            for number, script in enumerate(self.migrations[version:], start=version + 1):
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={number}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    async def write(self, work: Callable[[sqlite3.Connection], T], *, single: bool = False) -> T:
        """Run ``work`` in one immediate transaction: here if the file is free, else in a worker thread.

        ``single=True`` says ``work`` is one statement, which SQLite already runs as its own transaction.
        """
        fast = self._fast or self._open()[0]
        if self._fast_lock.acquire(blocking=False):
            try:
                return work(fast) if single else _transaction(fast, work)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
            finally:
                self._fast_lock.release()
        return await anyio.to_thread.run_sync(self.write_blocking, work)

    def write_blocking(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """The same transaction, waiting for the write lock (for worker threads and command-line tools)."""
        slow = self._slow or self._open()[1]
        with self._slow_lock:
            return _retry(lambda: _transaction(slow, work))

    def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read on the waiting connection (readers never block the writer in WAL mode)."""
        slow = self._slow or self._open()[1]
        with self._slow_lock:
            return _retry(lambda: work(slow))

    def close(self) -> None:
        with self._fast_lock, self._slow_lock:
            _close_all(self._connections)
            self._fast = self._slow = None


def _transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def _retry(step: Callable[[], T]) -> T:
    """Retry on SQLITE_BUSY beyond busy_timeout (a WAL upgrade or a checkpoint can still report it)."""
    deadline = time.monotonic() + RETRY_SECONDS
    delay = 0.005
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _close_all(connections: list[sqlite3.Connection]) -> None:
    while connections:
        connections.pop().close()
