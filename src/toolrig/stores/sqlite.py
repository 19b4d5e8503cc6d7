"""SQLite for toolrig's embedded stores: WAL, numbered migrations, and retries so "locked" never reaches a model.

Trust model: the database files live under ``.toolrig/`` where no tool path can reach; values come from
models but only ever travel as bound parameters, never as SQL text.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from toolrig.errors import ErrorType, ToolError

T = TypeVar("T")

BUSY_TIMEOUT_MS = 2_000
MAX_WAIT_SECONDS = 30.0
_BUSY_WORDS = ("locked", "busy")


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock; waiting is the cure."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return any(word in str(exc).lower() for word in _BUSY_WORDS)


class Database:
    """One SQLite file, shared by the threads of this process through one connection and a lock.

    Every write runs in ``BEGIN IMMEDIATE`` (so two processes never deadlock upgrading a read lock)
    and is retried with jittered backoff while another process holds the lock, up to ``max_wait``.
    """

    def __init__(
        self,
        path: Path,
        migrations: Sequence[str] = (),
        *,
        synchronous: str = "NORMAL",
        max_wait: float = MAX_WAIT_SECONDS,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self.path = path
        self.max_wait = max_wait
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # isolation_level=None: we issue BEGIN ourselves, so the transaction kind is ours to choose.
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self.retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL").fetchone())
        self._conn.execute(f"PRAGMA synchronous = {synchronous}")
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._migrate(migrations)

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def retry(self, action: Callable[[], T]) -> T:
        """Run ``action`` until it gets past SQLITE_BUSY, backing off; give up as ``unavailable``."""
        deadline = time.monotonic() + self.max_wait
        delay = 0.005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise ToolError(
                        ErrorType.UNAVAILABLE,
                        f"The store is busy: another process kept it locked for {self.max_wait:g} seconds.",
                        "Retry in a moment.",
                    ) from None
                time.sleep(delay * (0.5 + random.random()))  # noqa: S311 - jitter, not security
                delay = min(delay * 2, 0.25)

    def write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in one immediate transaction; committed when it returns, rolled back if it raises."""

        def attempt() -> T:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        with self._lock:
            return self.retry(attempt)

    def read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return self.retry(lambda: body(self._conn))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _migrate(self, migrations: Sequence[str]) -> None:
        """Apply the migrations this file has not seen yet; ``user_version`` counts the ones applied."""

        def upgrade(conn: sqlite3.Connection) -> None:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(migrations):
                raise RuntimeError(
                    f"{self.path} was written by a newer toolrig (schema {version}, this one knows {len(migrations)})"
                )
            for number, script in enumerate(migrations[version:], start=version + 1):
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

        if migrations:
            self.write(upgrade)


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``executescript`` would commit our transaction)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
