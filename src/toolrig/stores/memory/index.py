"""The memory index: BM25 over the paragraphs of an agent's memory files, kept fresh at every search.

Trust model: the files are the agent's own (resolved and confined by the memory tools); the index lives
under ``.toolrig/`` and is derived data: deleting it loses nothing, the next search rebuilds it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.memory.chunking import content_terms, fts_terms, paragraph_columns, snippet
from toolrig.stores.memory.watch import DirectoryWatch

if TYPE_CHECKING:
    from toolrig.stores.memory.semantic import SemanticIndex
from toolrig.stores.sqlite import Database

ROOT_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
BATCH = 500  # files read and split at a time; more than one batch to index makes a bulk index
# A bulk index writes batches in transactions of about this many bytes of files: FTS5 writes its segments
# at every commit, so small transactions write (and later merge) far more pages. Bounded so that another
# process waiting to write gets its turn within seconds.
TRANSACTION_BYTES = 8 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
FULL_WALK_SECONDS = 10.0  # with inotify, a full stat walk still runs at least this often
_READ_AHEAD = 2  # batches read and split ahead of the one being written
_AUDIT_STRIDE = 32  # the audit walk checks for a running search every this many files...
_AUDIT_PAUSE = 0.005  # ...and waits up to this long for it: paused, it still walks 10,000 files in 1.6 s
COMMON_ROWS = 500  # a query term in more paragraphs than this is "common" (see MemoryIndex._ranked)

_PROBE = "SELECT rowid FROM chunks WHERE chunks MATCH ? LIMIT ?"
_BM25 = (  # rank in the subquery, so only the winners are read back with their text
    "SELECT c.rowid, c.path, c.start, c.end, c.text, r.score FROM ("
    "SELECT rowid AS id, bm25(chunks) AS score FROM chunks WHERE chunks MATCH ? "
    "ORDER BY bm25(chunks) LIMIT ?) AS r CROSS JOIN chunks c ON c.rowid = r.id ORDER BY r.score"
)
_NEWEST = (
    "SELECT c.rowid, c.path, c.start, c.end, c.text, 0.0 FROM ("
    "SELECT rowid AS id FROM chunks WHERE chunks MATCH ? ORDER BY rowid DESC LIMIT ?) AS r "
    "CROSS JOIN chunks c ON c.rowid = r.id ORDER BY r.id DESC"
)

Progress = Callable[[int, int], None]
Hidden = Callable[..., bool]  # the workspace's predicate: hidden(path, is_dir=...) for deny globs, .git, state

MIGRATIONS = (
    """
    CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL);
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: semantic vectors are keyed by it
        path TEXT NOT NULL REFERENCES files (path) ON DELETE CASCADE,
        start INTEGER NOT NULL,
        end INTEGER NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX chunks_path ON chunks (path);
    CREATE VIRTUAL TABLE chunks_fts USING fts5 (
        text, content = 'chunks', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER chunks_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER chunks_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    """,
    # A per-row trigger makes FTS5 indexing 4x slower than one INSERT ... SELECT per batch (measured).
    "DROP TRIGGER chunks_insert;",
    # The paragraphs live in the FTS5 table itself, their text stored once, as in a bare FTS5 insert: the
    # separate chunks table (and its path index and foreign key) cost a first build ~0.5 s of CPU in 1.5.
    # A file's paragraphs get consecutive ids, so its row names them as a range. Ids are still never
    # reused (semantic vectors are keyed by them): the next one is kept, carried over from the old table.
    # The index is derived data: the old rows go, and the next refresh rebuilds it from the files.
    """
    CREATE TABLE chunk_ids (next INTEGER NOT NULL);
    INSERT INTO chunk_ids SELECT coalesce((SELECT max(seq) FROM sqlite_sequence WHERE name = 'chunks'), 0) + 1;
    DROP TRIGGER chunks_delete;
    DROP TABLE chunks_fts;
    DROP TABLE chunks;
    DROP TABLE files;
    CREATE TABLE files (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL,
        first_id INTEGER NOT NULL,  -- the file's paragraphs are chunks rows first_id..last_id (empty if last < first)
        last_id INTEGER NOT NULL
    );
    CREATE VIRTUAL TABLE chunks USING fts5 (
        text, path UNINDEXED, start UNINDEXED, end UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER files_delete AFTER DELETE ON files BEGIN
        DELETE FROM chunks WHERE rowid BETWEEN old.first_id AND old.last_id;
    END;
    """,
)


@dataclass(frozen=True, slots=True)
class _Audit:
    """What the periodic full walk found: files whose stat differs from the index's, and files gone."""

    hidden: Hidden | None
    generation: int
    differs: list[tuple[str, os.stat_result]]
    missing: list[str]


@dataclass(slots=True)
class _Batch:
    """A batch of files read, hashed and split, in rows ready for the write transaction.

    Paragraph ids are offsets from the first id the transaction hands out (unknown until then: another
    process may be writing), so no row is rebuilt while the write lock is held.
    """

    touched: list[tuple[int, int, str]]  # size, mtime_ns, path: same content, new stat
    replaced: list[tuple[str, int, int, str, int, int]]  # path, size, mtime_ns, hash, first and last offset
    rows: list[tuple[int, str, str, int, int]]  # offset, text, path, start, end
    updates: dict[str, tuple[int, int, str]]  # what the index knows of each file once this batch commits


@dataclass(frozen=True, slots=True)
class MemoryHit:
    file: str  # relative to the memory root, '/'-separated
    start: int
    end: int
    snippet: str
    score: float

    @property
    def lines(self) -> str:
        return f"{self.start}-{self.end}" if self.end != self.start else str(self.start)


@dataclass(frozen=True, slots=True)
class RefreshReport:
    indexed: int
    removed: int
    unchanged: int


def is_memory_path(relative: str) -> bool:
    return relative in ROOT_FILES or (relative.startswith(f"{MEMORY_DIR}/") and relative.endswith(".md"))


def memory_files(
    root: Path, directories: list[str] | None = None, *, files: bool = True, hidden: Hidden | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """``MEMORY.md``, ``memory.md`` and ``memory/**/*.md`` under ``root``; symlinks are never followed.

    ``directories`` collects the directories walked ('' for the root), for the watcher; ``files=False``
    walks directories only (no stat calls, so it is cheap). What ``hidden`` says is hidden (a deny glob)
    is neither entered nor yielded.
    """
    if directories is not None:
        directories.append("")
    for name in ROOT_FILES if files else ():
        try:
            info = os.lstat(root / name)
        except OSError:
            continue
        if _is_file(info) and not (hidden is not None and hidden(root / name)):
            yield name, info
    stack = [(root / MEMORY_DIR, MEMORY_DIR)]
    while stack:
        directory, relative = stack.pop()
        try:
            entries = os.scandir(directory)
        except OSError:
            continue
        if directories is not None:
            directories.append(relative)
        with entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if hidden is None or not hidden(Path(entry.path), is_dir=True):
                        stack.append((Path(entry.path), f"{relative}/{entry.name}"))
                elif (
                    files
                    and entry.name.endswith(".md")
                    and entry.is_file(follow_symlinks=False)
                    and (hidden is None or not hidden(Path(entry.path)))
                ):
                    yield f"{relative}/{entry.name}", entry.stat(follow_symlinks=False)


def _is_file(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode)


def _read_regular(path: str, size: int) -> bytes | None:
    """The bytes of a regular file, or None; a symlink or FIFO swapped in since the walk is not opened or read.

    ``size`` (from the walk) sizes the first read: one ``open``, ``fstat``, ``read`` and ``close``, about
    a third of what ``Path.read_bytes`` costs, which counts when a first build reads 10,000 files.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        parts = [data]  # it grew since the walk: read to the end
        while more := os.read(fd, 1 << 20):
            parts.append(more)
        return b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(fd)


class MemoryIndex:
    """One memory root's index. Thread-safe; several processes may share the file (SQLite locking)."""

    def __init__(self, root: Path, db_path: Path, *, semantic: bool = False) -> None:
        self.root = root
        self.db = Database(db_path, MIGRATIONS)
        self._semantic: SemanticIndex | None = None
        if semantic:
            from toolrig.stores.memory.semantic import SemanticIndex

            self._semantic = SemanticIndex(db_path.with_name(db_path.stem + ".vectors.sqlite"))
        self._vectors_stale = True
        self._refresh_lock = threading.Lock()
        self._watch = DirectoryWatch(root)
        self._last_walk = float("-inf")
        self._hidden: Hidden | None = None
        self._auditing = False
        self._audit_result: _Audit | None = None
        self._audit_generation = 0  # a full walk outdates an audit still running
        self._since_audit: set[str] = set()
        self._users = 0  # refreshes and searches running now; the audit walk pauses for them
        self._users_lock = threading.Lock()
        self._quiet = threading.Event()
        self._quiet.set()
        self._file_generation = self.db.generation
        self._known = self._indexed_files()

    def _indexed_files(self) -> dict[str, tuple[int, int, str]]:
        return self.db.read(
            lambda conn: {
                row[0]: (row[1], row[2], row[3]) for row in conn.execute("SELECT path, size, mtime_ns, hash FROM files")
            }
        )

    def refresh(self, progress: Progress | None = None, *, hidden: Hidden | None = None) -> RefreshReport:
        """Re-index the files whose size or mtime changed (and whose hash then differs); drop deleted ones.

        Files ``hidden`` hides are dropped from the index like deleted ones; a new predicate (the deny
        globs changed) means a full walk.
        """
        with self._in_use(), self._refresh_lock:
            now = time.monotonic()
            generation = self.db.generation
            if generation != self._file_generation:  # a new index file (the state dir was deleted): fill it
                self._file_generation = generation
                self._known = self._indexed_files()
                self._last_walk = float("-inf")
                self._audit_result = None
                self._since_audit = set()
                self._vectors_stale = True
            if hidden != self._hidden:
                self._hidden = hidden
                self._last_walk = float("-inf")
                self._audit_result = None
                self._since_audit = set()
            hidden = self._hidden
            touched = self._watch.take() if self._last_walk > float("-inf") else None
            found = self._audit_result
            audit = found if found and found.hidden == hidden and found.generation == self._audit_generation else None
            if touched is not None and (self._auditing or audit is not None):
                self._since_audit |= touched  # changes after the audit listed a directory: stat them again
            if touched is not None and audit is not None:
                self._audit_result = None
                candidates, gone = self._merge_audit(audit, self._since_audit)
                self._since_audit = set()
            elif touched is not None:
                # A full walk now and then still catches what inotify cannot see (network filesystems); it
                # runs beside the searches (a stat of every file is tens of ms) and the next refresh uses it.
                if now - self._last_walk >= FULL_WALK_SECONDS:
                    self._start_audit(now, hidden)
                candidates, gone = self._stat_touched(touched)
            else:
                if self._watch.active:  # watch first, then walk: a change made meanwhile is seen (twice at worst)
                    directories: list[str] = []
                    for _ in memory_files(self.root, directories, files=False, hidden=hidden):
                        pass
                    self._watch.watch(directories)
                candidates = list(memory_files(self.root, hidden=hidden))
                self._last_walk = now
                self._audit_generation += 1
                self._audit_result = None
                present = {relative for relative, _ in candidates}
                gone = [path for path in self._known if path not in present]
            changed: list[tuple[str, int, int]] = []
            for relative, info in candidates:
                known = self._known.get(relative)
                if known is None or known[0] != info.st_size or known[1] != info.st_mtime_ns:
                    changed.append((relative, info.st_size, info.st_mtime_ns))

            if gone:
                self.db.write(lambda conn: conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone]))
                for path in gone:
                    del self._known[path]
            indexed = self._index_changed(changed, progress)
            if self._semantic is not None and (self._vectors_stale or indexed or gone):
                chunks = self.db.read(lambda conn: dict(conn.execute("SELECT rowid, text FROM chunks").fetchall()))
                self._semantic.sync(chunks)
                self._vectors_stale = False
            return RefreshReport(indexed, len(gone), len(self._known) - len(changed))

    @contextmanager
    def _in_use(self) -> Iterator[None]:
        with self._users_lock:
            self._users += 1
            self._quiet.clear()
        try:
            yield
        finally:
            with self._users_lock:
                self._users -= 1
                if not self._users:
                    self._quiet.set()

    def _start_audit(self, now: float, hidden: Hidden | None) -> None:
        if self._auditing:
            return
        self._auditing = True
        self._since_audit = set()
        self._last_walk = now
        generation = self._audit_generation

        def walk() -> None:
            try:
                self._audit_result = self._audit(hidden, generation)
            except Exception:  # a failed audit is retried at the next period
                self._audit_result = None
            finally:
                self._auditing = False

        threading.Thread(target=walk, name="memory-audit", daemon=True).start()

    def _audit(self, hidden: Hidden | None, generation: int) -> _Audit:
        """The full walk, compared with what the index knows, in the audit's thread.

        Comparing 10,000 entries is ~15 ms of Python: done in a search, it was that search's whole
        latency (the p99). Here it pauses (up to ``_AUDIT_PAUSE`` at a time, every ``_AUDIT_STRIDE``
        entries) while a refresh or search runs: a thread holding the GIL can be preempted by the OS on a
        loaded machine, and the search then waits for it (measured: the slowest searches all ran beside
        the walk, at under 1 ms of CPU each). A path the index learns about after this comparison was
        reported by inotify, and the merge stats it afresh.
        """
        known = self._known  # read, never changed, here: single lookups and one copy of the keys are safe
        present: set[str] = set()
        differs: list[tuple[str, os.stat_result]] = []
        for number, (relative, info) in enumerate(memory_files(self.root, hidden=hidden)):
            present.add(relative)
            seen = known.get(relative)
            if seen is None or seen[0] != info.st_size or seen[1] != info.st_mtime_ns:
                differs.append((relative, info))
            if number % _AUDIT_STRIDE == 0 and not self._quiet.is_set():
                self._quiet.wait(_AUDIT_PAUSE)
        return _Audit(hidden, generation, differs, [path for path in list(known) if path not in present])

    def _merge_audit(self, audit: _Audit, touched: set[str]) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
        """The audit's findings, with every path inotify reported since (or during) it stat-ed afresh."""
        fresh, gone_now = self._stat_touched(touched)
        candidates = [(relative, info) for relative, info in audit.differs if relative not in touched] + fresh
        gone = [path for path in audit.missing if path in self._known and path not in touched] + gone_now
        return candidates, list(dict.fromkeys(gone))

    def _stat_touched(self, touched: set[str]) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
        candidates: list[tuple[str, os.stat_result]] = []
        gone: list[str] = []
        for relative in touched:
            if not is_memory_path(relative):
                continue
            try:
                info = os.lstat(self.root / relative)
            except OSError:
                info = None
            if info is not None and self._hidden is not None and self._hidden(self.root / relative):
                info = None
            if info is not None and stat.S_ISREG(info.st_mode):
                candidates.append((relative, info))
            elif relative in self._known:
                gone.append(relative)
        return candidates, gone

    def _index_changed(self, changed: list[tuple[str, int, int]], progress: Progress | None) -> int:
        """Index the changed files; a bulk index (a first build) reads ahead in a thread and commits in large steps.

        Batches of ``BATCH`` files are read, hashed and split in a thread (up to ``_READ_AHEAD`` ahead)
        while this thread writes earlier ones; reading and hashing give up the GIL, and so does SQLite
        while it tokenizes and commits. The batches go in with one transaction per ``TRANSACTION_BYTES``.
        Durability is the database's own (WAL, ``synchronous = NORMAL``): a kill -9 or a power loss leaves
        whole transactions, a correct index of the files its ``files`` rows name, which the next refresh
        (always run before a search) completes. A files row and its paragraphs commit together, so no
        file is ever half indexed.
        """
        if not changed:
            return 0
        if len(changed) <= BATCH:  # the warm path: a thread would cost more than it saves
            indexed = self._write_batch(self._prepare(changed))
            if progress is not None:
                progress(len(changed), len(changed))
            return indexed
        from concurrent.futures import Future, ThreadPoolExecutor

        batches = [changed[begin : begin + BATCH] for begin in range(0, len(changed), BATCH)]
        groups: list[list[int]] = [[]]  # the batches of each transaction
        size = 0
        for number, batch in enumerate(batches):
            if size >= TRANSACTION_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(number)
            size += sum(entry[1] for entry in batch)
        indexed = done = 0
        with ThreadPoolExecutor(1, thread_name_prefix="memory-read") as reader:
            pending: dict[int, Future[_Batch]] = {}

            def prepared(number: int) -> _Batch:
                for ahead in range(number, min(number + _READ_AHEAD + 1, len(batches))):
                    if ahead not in pending:
                        pending[ahead] = reader.submit(self._prepare, batches[ahead])
                return pending.pop(number).result()

            for group in groups:
                taken: list[_Batch] = []  # kept for a retried transaction

                def body(conn: sqlite3.Connection, group: list[int] = group, taken: list[_Batch] = taken) -> int:
                    count = 0
                    for position, number in enumerate(group):
                        if position == len(taken):
                            taken.append(prepared(number))
                        count += self._index_batch(conn, taken[position])
                    return count

                indexed += self.db.write(body)
                for written in taken:  # only once committed: a rolled-back batch is read again next time
                    self._known.update(written.updates)
                done += sum(len(batches[number]) for number in group)
                if progress is not None:
                    progress(done, len(changed))
        return indexed

    def _write_batch(self, batch: _Batch) -> int:
        indexed = self.db.write(lambda conn: self._index_batch(conn, batch))
        self._known.update(batch.updates)  # only once committed: a rolled-back batch is read again next time
        return indexed

    def _prepare(self, files: list[tuple[str, int, int]]) -> _Batch:
        """Read, hash and split files before the write transaction, so the lock is held for inserts only."""
        batch = _Batch([], [], [], {})
        rows = batch.rows
        root = f"{self.root}{os.sep}"
        for relative, size, mtime_ns in files:
            data = _read_regular(root + relative, size)
            if data is None:
                continue  # vanished, unreadable or swapped since the walk; the next refresh sees it again
            digest = hashlib.blake2b(data, digest_size=16).hexdigest()
            batch.updates[relative] = (size, mtime_ns, digest)
            known = self._known.get(relative)
            if known is not None and known[2] == digest:
                batch.touched.append((size, mtime_ns, relative))
                continue
            first = len(rows)
            starts, ends, texts = paragraph_columns(data.decode("utf-8", "replace"))
            rows.extend(zip(range(first, first + len(texts)), texts, repeat(relative), starts, ends, strict=False))
            batch.replaced.append((relative, size, mtime_ns, digest, first, len(rows) - 1))
        return batch

    def _index_batch(self, conn: sqlite3.Connection, batch: _Batch) -> int:
        base = int(conn.execute("SELECT next FROM chunk_ids").fetchone()[0])  # under the write lock
        conn.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", batch.touched)
        # Another process may have indexed a file this one has not seen yet: replace, never duplicate (the
        # files_delete trigger drops the paragraphs of a replaced file).
        conn.executemany("DELETE FROM files WHERE path = ?", [(row[0],) for row in batch.replaced])
        # The base id is an int read from the database, not text from anyone: safe to inline.
        add_files = f"INSERT INTO files VALUES (?, ?, ?, ?, ? + {base}, ? + {base})"  # noqa: S608
        add_chunks = f"INSERT INTO chunks (rowid, text, path, start, end) VALUES (? + {base}, ?, ?, ?, ?)"  # noqa: S608
        conn.executemany(add_files, batch.replaced)
        conn.executemany(add_chunks, batch.rows)
        conn.execute("UPDATE chunk_ids SET next = ?", (base + len(batch.rows),))
        return len(batch.replaced)

    def search(self, query: str, max_results: int = 6) -> list[MemoryHit]:
        terms = fts_terms(query)
        if not terms:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                "The query has no words to search for.",
                'Search for words, or a "quoted phrase".',
            )
        limit = max_results if self._semantic is None else max(50, max_results)
        ranked_by = terms if self._semantic is None else content_terms(terms)
        with self._in_use():
            rows = self.db.read(lambda conn: self._ranked(conn, ranked_by, limit))
        if self._semantic is None:
            return [
                MemoryHit(p, start, end, snippet(text, query), float(f"{-rank:.4g}"))
                for _, p, start, end, text, rank in rows
            ]
        return self._hybrid(query, rows, max_results)

    def _ranked(
        self, conn: sqlite3.Connection, terms: list[str], limit: int
    ) -> list[tuple[int, str, int, int, str, float]]:
        """The best ``limit`` paragraphs, with a cost bounded however common the query's words are.

        FTS5's bm25 scores every paragraph that matches (and counts each term's paragraphs first), so a
        word found in most paragraphs costs a scan of the whole index. Like Lucene's common-terms query,
        a term in more than ``COMMON_ROWS`` paragraphs does not drive the ranking: paragraphs are ranked
        by BM25 over the query's other terms, and when those find fewer than ``limit``, the rest are the
        newest paragraphs that hold the common terms (score 0). Probing a term stops at ``COMMON_ROWS + 1``.
        """
        rare = [term for term in terms if len(conn.execute(_PROBE, (term, COMMON_ROWS + 1)).fetchall()) <= COMMON_ROWS]
        rows: list[tuple[int, str, int, int, str, float]] = []
        if rare:
            rows = conn.execute(_BM25, (" OR ".join(rare), limit)).fetchall()
        common = [term for term in terms if term not in rare]
        if len(rows) < limit and common:
            seen = {row[0] for row in rows}
            newest = conn.execute(_NEWEST, (" OR ".join(common), limit + len(rows))).fetchall()
            rows += [row for row in newest if row[0] not in seen][: limit - len(rows)]
        return rows

    def _hybrid(
        self, query: str, bm25_rows: list[tuple[int, str, int, int, str, float]], max_results: int
    ) -> list[MemoryHit]:
        """BM25 and nearest embeddings, fused by rank; finds paraphrases that share no word with the query."""
        from toolrig.stores.memory.semantic import fuse

        assert self._semantic is not None  # noqa: S101 - only called when semantic search is on
        nearest = self._semantic.nearest(query, max(50, max_results))
        bm25 = [(row[0], -row[5]) for row in bm25_rows]  # FTS5's bm25() is lower for better matches
        fused = fuse(bm25, [(chunk_id, -distance) for chunk_id, distance in nearest])[:max_results]
        ids = [chunk_id for chunk_id, _ in fused]
        details = self.db.read(  # one rowid lookup each: FTS5 scans the whole table for an IN list
            lambda conn: {
                chunk_id: row
                for chunk_id in ids
                for row in conn.execute("SELECT path, start, end, text FROM chunks WHERE rowid = ?", (chunk_id,))
            }
        )
        return [
            MemoryHit(path, start, end, snippet(text, query), float(f"{score * 100:.4g}"))
            for chunk_id, score in fused
            if chunk_id in details
            for path, start, end, text in [details[chunk_id]]
        ]

    def close(self) -> None:
        if self._semantic is not None:
            self._semantic.close()
        self._watch.close()
        self.db.close()
