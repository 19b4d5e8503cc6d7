"""SQLite for everything toolrig keeps under ``.toolrig/``: stores, audit log, rate limits, sessions.

Trust model: the files live where no tool path can reach and are shared by every toolrig process of the
user; values (from models) only ever travel as bound parameters, never as SQL text. A state dir comes
with the repository, so a file (or its directory) that is a symlink is refused before SQLite opens it.

Every file runs in WAL mode (readers beside the writer) with numbered migrations. Writes are immediate
transactions (two processes never deadlock upgrading a read lock), retried with jittered backoff while
another process holds the lock, up to ``max_wait``; then the caller gets ``ToolError(unavailable)``,
never "database is locked". Async callers on a hot path use ``write_async``: it tries on the event
loop's thread with no busy wait (no thread hop) and moves to a worker thread only when the lock is
taken. ``Database.shared`` keeps one open database per file for the whole process, for users that open
the same file again and again. An append-heavy file (the audit log) may move WAL checkpoints off the
committing call (``checkpoint_after``): SQLite's own autocheckpoint runs inside the commit that crosses
its threshold and syncs twice there.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.statedir import prepare_database

T = TypeVar("T")
log = logging.getLogger("toolrig.stores")

BUSY_TIMEOUT_MS = 2_000
MAX_WAIT_SECONDS = 30.0
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
_BUSY_WORDS = ("locked", "busy")


def is_busy(exc: Exception) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock; waiting is the cure."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return any(word in str(exc).lower() for word in _BUSY_WORDS)


class Database:
    """One SQLite file, shared by the threads of this process.

    Two connections at most: a waiting one (``busy_timeout_ms``, guarded by a lock) for ``read`` and
    ``write`` from any thread, and, once ``write_async`` is used, one with no busy wait for the event
    loop's fast path. ``lazy=True`` opens the file on first use, so constructing costs nothing.
    ``accept_newer=True`` lets a file migrated by a newer toolrig be used as it is (for append-only
    tables whose columns this version names), where the default refuses it. ``driver`` is a DB-API
    module built on SQLite (``pysqlite3.dbapi2`` where the standard one cannot load extensions) and
    ``setup`` runs on every new connection before the migrations (loading an extension, say).
    ``page_size`` applies to a file this call creates (an existing file keeps its own). ``checkpoint_after``
    (commits; 0 leaves it to SQLite) turns SQLite's autocheckpoint off on this process's connections and
    runs a passive checkpoint in a worker thread after that many commits, so no commit pays for one.
    """

    def __init__(
        self,
        path: Path,
        migrations: Sequence[str] = (),
        *,
        synchronous: str = "NORMAL",
        max_wait: float = MAX_WAIT_SECONDS,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        lazy: bool = False,
        accept_newer: bool = False,
        driver: Any = sqlite3,
        setup: Callable[[Any], None] | None = None,
        page_size: int | None = None,
        checkpoint_after: int = 0,
    ) -> None:
        if synchronous.upper() not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}")
        self.path = path
        self.migrations = tuple(migrations)
        self.synchronous = synchronous.upper()
        self.max_wait = max_wait
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.accept_newer = accept_newer
        self.driver = driver
        self.setup = setup
        self.page_size = page_size
        self.checkpoint_after = checkpoint_after
        self._commits = 0  # since the last checkpoint this process started (checkpoint_after only)
        self._checkpointer: threading.Thread | None = None
        self._busy_error: type[Exception] = driver.OperationalError
        self._conn: sqlite3.Connection | None = None  # waits on busy; used under _lock
        self._fast: sqlite3.Connection | None = None  # busy_timeout 0; used by whoever gets _fast_lock
        self._lock = threading.RLock()
        self._fast_lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._finalizer = weakref.finalize(self, _close_all, self._connections)
        if not lazy:
            self._open()

    @classmethod
    def shared(cls, path: Path, migrations: Sequence[str] = (), **settings: Any) -> Database:
        """The process's one open database for ``path``, opened by the first caller with its settings.

        Closing the last connection to a WAL file checkpoints and syncs it (~20 ms here): a user that
        opens the same file for every run gets it once per process instead. ``close()`` ends the sharing.
        """
        found = _SHARED.get(path)
        if found is not None:
            return found
        with _SHARED_LOCK:
            prepare_database(path)  # before resolving: a committed symlink must be refused, not followed
            resolved = path.resolve()
            found = _SHARED.get(resolved)
            if found is None:
                found = cls(resolved, migrations, **settings)
                _SHARED[resolved] = found
            if path.is_absolute():  # a relative path may mean another file after a chdir
                _SHARED[path] = found
            return found

    @property
    def is_shared(self) -> bool:
        """Still the process's shared database for its file (not closed since, not inherited through a fork)."""
        return _SHARED.get(self.path) is self

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn or self._open()

    def retry(self, action: Callable[[], T]) -> T:
        """Run ``action`` until it gets past SQLITE_BUSY, backing off; give up as ``unavailable``."""
        deadline = time.monotonic() + self.max_wait
        delay = 0.005
        while True:
            try:
                return action()
            except self._busy_error as exc:
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

    def write(self, body: Callable[[sqlite3.Connection], T], *, single: bool = False) -> T:
        """Run ``body`` in one immediate transaction, waiting for the lock; rolled back if it raises.

        ``single=True`` says ``body`` is one statement, which SQLite already runs as its own transaction.
        """
        with self._lock:
            conn = self._conn or self._open()
            done = self.retry(lambda: body(conn) if single else _transaction(conn, body))
        if self.checkpoint_after:
            self._committed()
        return done

    async def write_async(self, body: Callable[[sqlite3.Connection], T], *, single: bool = False) -> T:
        """``write`` for the event loop: here if the file is free (no thread hop), else in a worker thread."""
        done = self._write_here(body, single)
        if done is not _NOT_HERE:
            return done  # type: ignore[return-value] # _NOT_HERE is the only other value
        return await anyio.to_thread.run_sync(lambda: self.write(body, single=single))

    def write_soon(
        self, body: Callable[[sqlite3.Connection], object], *, single: bool = False
    ) -> Awaitable[Any] | None:
        """``write_async`` for a caller that needs no value: None once written here, else what to await.

        A hot path (the audit row of every call) thereby makes no coroutine when the file is free.
        """
        if self._write_here(body, single) is not _NOT_HERE:
            return None
        return anyio.to_thread.run_sync(lambda: self.write(body, single=single))

    def _write_here(self, body: Callable[[sqlite3.Connection], T], single: bool) -> T | object:
        """The write on this thread with no busy wait, or ``_NOT_HERE`` (nothing written) when the file is taken."""
        fast = self._fast or self._open_fast()
        if self._fast_lock.acquire(blocking=False):
            try:
                done = body(fast) if single else _transaction(fast, body)
            except self._busy_error as exc:
                if not is_busy(exc):
                    raise
            else:
                if self.checkpoint_after:
                    self._committed()
                return done
            finally:
                self._fast_lock.release()
        return _NOT_HERE

    # ------------------------------------------------------------------------------ checkpoints

    def _committed(self) -> None:
        self._commits += 1  # a lost increment (two threads) only delays a checkpoint by a commit
        if self._commits < self.checkpoint_after:
            return
        running = self._checkpointer
        if running is not None and running.is_alive():  # (a forked child sees its parent's thread as ended)
            return
        self._commits = 0
        # Not a daemon: the interpreter waits for a checkpoint in flight instead of tearing SQLite down under it.
        thread = threading.Thread(target=self._checkpoint, name="toolrig-sqlite-checkpoint")
        try:
            thread.start()
        except RuntimeError:  # no new threads (the interpreter is shutting down): the last close checkpoints
            return
        self._checkpointer = thread

    def _checkpoint(self) -> None:
        """Copy the WAL back into the file beside the writers, and keep the WAL from growing without end.

        PASSIVE waits for nobody and blocks nobody, but while rows keep coming it never catches up with the
        newest frames, and SQLite starts the WAL over only once every frame is copied: under a steady stream
        of calls it grew by a page per row. So once the WAL holds ``_RESTART_AFTER`` checkpoints' worth, a
        RESTART copies the last frames holding the write lock (writers wait a few milliseconds: the fast path
        then waits in a worker thread) and waits at most ``_RESTART_WAIT_MS`` for readers, else tries later.
        """
        try:
            with self._lock:
                conn = self._conn
                if conn is None:  # closed meanwhile: closing checkpointed it
                    return
                _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if frames >= self.checkpoint_after * _RESTART_AFTER:
                    conn.execute(f"PRAGMA busy_timeout = {_RESTART_WAIT_MS}")
                    try:
                        conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
                    finally:
                        conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
        except Exception:  # a checkpoint is housekeeping: the next one, or the last close, does it
            log.debug("checkpoint of %s failed", self.path, exc_info=True)

    def read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read on the waiting connection (readers never block the writer in WAL mode)."""
        with self._lock:
            conn = self._conn or self._open()
            return self.retry(lambda: body(conn))

    def close(self) -> None:
        """Close the connections (the next use reopens them) and stop sharing this database."""
        with self._fast_lock, self._lock:
            _close_all(self._connections)
            self._conn = self._fast = None
        with _SHARED_LOCK:
            for key in [key for key, db in _SHARED.items() if db is self]:
                del _SHARED[key]

    # ------------------------------------------------------------------------------ opening

    def _connect(self, busy_ms: int) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN ourselves, so the transaction kind is ours to choose.
        conn: sqlite3.Connection = self.driver.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=busy_ms / 1000
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            if self.page_size is not None:  # before the file has a page: later, SQLite ignores it
                conn.execute(f"PRAGMA page_size = {int(self.page_size)}")
            if self.checkpoint_after:
                conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            if self.setup is not None:
                self.setup(conn)
        except BaseException:
            conn.close()
            raise
        self._connections.append(conn)
        return conn

    def _open(self) -> sqlite3.Connection:
        with self._lock:
            if self._conn is None:
                prepare_database(self.path)
                conn = self._connect(self.busy_timeout_ms)
                try:
                    self.retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
                    self._migrate(conn)
                except BaseException:
                    self._connections.remove(conn)
                    conn.close()
                    raise
                self._conn = conn
            return self._conn

    def _open_fast(self) -> sqlite3.Connection:
        with self._lock:
            if self._conn is None:
                self._open()  # the waiting connection migrates the file first
            if self._fast is None:
                self._fast = self._connect(0)
            return self._fast

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Apply the migrations this file has not seen yet; ``user_version`` counts the ones applied."""
        known = len(self.migrations)

        def version() -> int:
            found = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if found > known and not self.accept_newer:
                raise RuntimeError(
                    f"{self.path} was written by a newer toolrig (schema {found}, this one knows {known})"
                )
            return found

        def upgrade(conn: sqlite3.Connection) -> None:
            current = version()  # again under the write lock: another process may have migrated meanwhile
            for number, script in enumerate(self.migrations[current:], start=current + 1):
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

        if self.retry(version) < known:  # an up-to-date file is opened without taking the write lock
            self.retry(lambda: _transaction(conn, upgrade))


def _transaction(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``executescript`` would commit our transaction)."""
    statements: list[str] = []
    start = 0
    for end, char in enumerate(script, start=1):
        if char == ";" and sqlite3.complete_statement(script[start:end]):  # not a ';' inside a string
            statements.append(script[start:end].strip())
            start = end
    statements.append(script[start:].strip())
    return [statement for statement in statements if statement.strip(";")]


def _close_all(connections: list[sqlite3.Connection]) -> None:
    while connections:
        connections.pop().close()


_NOT_HERE = object()
_RESTART_AFTER = 4  # checkpoints' worth of WAL frames before a checkpoint takes the write lock to finish
_RESTART_WAIT_MS = 50  # how long that checkpoint waits for readers (and a writer) before trying again later
_SHARED: dict[Path, Database] = {}
_SHARED_LOCK = threading.Lock()


def _forget_shared_after_fork() -> None:
    """A forked child must not use (or close) its parent's connections: it opens its own on demand."""
    for db in _SHARED.values():
        db._finalizer.detach()
    _SHARED.clear()


os.register_at_fork(after_in_child=_forget_shared_after_fork)
