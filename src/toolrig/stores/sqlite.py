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

An open connection holds its file's inode, not its name: when the state dir is deleted or replaced while a
process runs, its writes would land in an unlinked inode and be lost without an error. So every read and
write first compares the path's (st_dev, st_ino) with the file the connections were opened on (one
``lstat``: a system call, ~2.5 µs on the 2-vCPU VM, as much as SQLite's own ``SQLITE_FCNTL_HAS_MOVED``
check would cost) and reopens on the file now at the path (made anew, migrated) when they differ. A write
that raced the replacement lands in the old file, as if it had happened just before.
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
from toolrig.sandbox.statedir import StatePath, prepare_database

# Jitter for retries on a busy database: its own generator, so a retry in another thread never changes the
# program's global random state (a seeded simulation, a property-based test drawing examples).
_JITTER = random.Random()  # noqa: S311 - jitter, not security

T = TypeVar("T")
log = logging.getLogger("toolrig.stores")

FileId = tuple[int, int]

BUSY_TIMEOUT_MS = 2_000
OPEN_ATTEMPTS = 5
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
        self._sqlite_error: type[Exception] = driver.DatabaseError
        self._conn: sqlite3.Connection | None = None  # waits on busy; used under _lock
        self._fast: sqlite3.Connection | None = None  # busy_timeout 0; used by whoever gets _fast_lock
        self._lock = threading.RLock()
        self._fast_lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._file: FileId | None = None  # the (st_dev, st_ino) the open connections write to
        self._generation = 0  # counts the opens of the waiting connection (see ``generation``)
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
        self._follow_path()
        return self._conn or self._open()

    @property
    def generation(self) -> int:
        """Changes whenever the connections open (again) on the file at the path, replaced or not.

        A cache of the file's rows kept in memory (the memory index's list of indexed files) reloads when it
        changes: after the state dir was deleted, the file at the path is a new, empty one.
        """
        self._follow_path()
        if self._conn is None:
            self._open()
        return self._generation

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
                time.sleep(delay * (0.5 + _JITTER.random()))
                delay = min(delay * 2, 0.25)

    def write(self, body: Callable[[sqlite3.Connection], T], *, single: bool = False) -> T:
        """Run ``body`` in one immediate transaction, waiting for the lock; rolled back if it raises.

        ``single=True`` says ``body`` is one statement, which SQLite already runs as its own transaction.
        """
        done = self._on_current_file(
            lambda conn: self.retry(lambda: body(conn) if single else _transaction(conn, body))
        )
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
        self._follow_path()
        fast = self._fast or self._open_fast()
        if self._fast_lock.acquire(blocking=False):
            try:
                if fast is not self._fast:  # closed by another thread since (a replaced file, ``close``)
                    return _NOT_HERE
                done = body(fast) if single else _transaction(fast, body)
            except self._sqlite_error as exc:
                if not is_busy(exc) and not self._replaced():
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
        return self._on_current_file(lambda conn: self.retry(lambda: body(conn)))

    def close(self) -> None:
        """Close the connections (the next use reopens them) and stop sharing this database."""
        with self._fast_lock, self._lock:
            self._drop_connections()
        with _SHARED_LOCK:
            for key in [key for key, db in _SHARED.items() if db is self]:
                del _SHARED[key]

    # ------------------------------------------------------------------------------ the file at the path

    def _follow_path(self) -> None:
        """Reopen when the path no longer names the file the connections hold (deleted, replaced, moved)."""
        if self._file is not None and file_id(self.path) != self._file:
            with self._fast_lock, self._lock:  # the order ``close`` takes them in
                if self._file is not None and file_id(self.path) != self._file:
                    self._drop_connections()

    def _replaced(self) -> bool:
        held = self._file
        return held is None or file_id(self.path) != held

    def _on_current_file(self, action: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``action`` on the waiting connection, again on the new file if the path was replaced under it.

        A state dir deleted between the check and SQLite's next use of the directory (its WAL, a new
        connection) fails the statement ("disk I/O error", "unable to open"): that is no error of the
        caller's, and the transaction did not happen, so it runs on the file now at the path.
        """
        for _ in range(OPEN_ATTEMPTS):
            self._follow_path()
            with self._lock:
                conn = self._conn or self._open()
                held = self._file
                try:
                    return action(conn)
                except self._sqlite_error:
                    if file_id(self.path) == held:
                        raise
        raise _kept_replacing(self.path)

    def _drop_connections(self) -> None:
        """Close every connection (callers hold both locks, or ``_lock`` while no fast connection exists)."""
        _close_all(self._connections)
        self._conn = self._fast = None
        self._file = None

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
            for _ in range(OPEN_ATTEMPTS):
                if self._conn is not None:
                    return self._conn
                try:
                    prepare_database(self.path)
                except (FileNotFoundError, NotADirectoryError):  # the trusted base itself is gone
                    raise _base_gone(self.path) from None
                before = ensure_file(self.path)
                try:
                    conn = self._connect(self.busy_timeout_ms)
                except self._sqlite_error:
                    if before is not None and file_id(self.path) == before:
                        raise
                    continue  # the state dir went away meanwhile: make it again
                try:
                    self._prepare(conn)
                except BaseException as exc:
                    self._connections.remove(conn)
                    conn.close()
                    if isinstance(exc, self._sqlite_error) and (before is None or file_id(self.path) != before):
                        continue
                    raise
                # The path named the same file before and after SQLite opened it (and its WAL): that is the
                # file the connection holds. Otherwise it was replaced meanwhile: open the new one.
                if before is not None and file_id(self.path) == before:
                    self._conn, self._file = conn, before
                    self._generation += 1
                    return conn
                self._connections.remove(conn)
                conn.close()
            raise _kept_replacing(self.path)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        self.retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        self._migrate(conn)

    def _open_fast(self) -> sqlite3.Connection:
        with self._lock:
            for _ in range(OPEN_ATTEMPTS):
                if self._conn is None:
                    self._open()  # the waiting connection migrates the file first
                if self._fast is not None:
                    return self._fast
                try:
                    fast = self._connect(0)
                except self._sqlite_error:
                    if file_id(self.path) == self._file:
                        raise
                else:
                    if file_id(self.path) == self._file:
                        self._fast = fast
                        return fast
                    self._connections.remove(fast)
                    fast.close()
                # Replaced since the waiting connection opened: no fast connection exists, so ``_lock`` suffices.
                self._drop_connections()
            raise _kept_replacing(self.path)

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


def file_id(path: Path) -> FileId | None:
    """The identity of the entry at ``path`` itself (a symlink put there differs from the file it names)."""
    try:
        info = os.lstat(path)
    except OSError:  # gone, or its directory is: the next open says which, clearly
        return None
    return info.st_dev, info.st_ino


def ensure_file(path: Path) -> FileId | None:
    """The identity of the file at ``path``, made empty when missing: known before a connection opens it.

    A connection opened between two equal ``file_id``s of its path holds that file (inodes are not reused while
    linked), which no later check could tell otherwise: SQLite does not say which inode it opened.
    """
    found = file_id(path)
    if found is not None:
        return found
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        return None  # SQLite's own open reports it
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return info.st_dev, info.st_ino


def _base_gone(path: Path) -> ToolError:
    base = StatePath.of(path.parent).base
    return ToolError(
        ErrorType.UNAVAILABLE,
        f"'{base}', the directory that holds toolrig's state file '{path}', no longer exists (deleted or moved "
        "while toolrig was running).",
        f"Recreate '{base}' or restart toolrig in a directory that exists, then retry.",
    )


def _kept_replacing(path: Path) -> ToolError:
    return ToolError(
        ErrorType.UNAVAILABLE,
        f"'{path}' could not be used: it (or its directory) was deleted or replaced each of the {OPEN_ATTEMPTS} "
        "times toolrig opened it.",
        "Stop whatever keeps deleting or replacing toolrig's state directory, then retry.",
    )


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
