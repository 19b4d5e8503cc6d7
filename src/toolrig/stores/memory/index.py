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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.memory.chunking import Chunk, fts_terms, snippet, split_paragraphs
from toolrig.stores.memory.watch import DirectoryWatch

if TYPE_CHECKING:
    from toolrig.stores.memory.semantic import SemanticIndex
from toolrig.stores.sqlite import Database

ROOT_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
BATCH = 500  # files per write transaction while (re)indexing, so other writers get a turn
FULL_WALK_SECONDS = 10.0  # with inotify, a full stat walk still runs at least this often
COMMON_ROWS = 500  # a query term in more paragraphs than this is "common" (see MemoryIndex._ranked)

_PROBE = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?"
_BM25 = (  # rank in the subquery, so only the winners are joined to their text
    "SELECT c.id, c.path, c.start, c.end, c.text, r.score FROM ("
    "SELECT rowid AS id, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ? "
    "ORDER BY bm25(chunks_fts) LIMIT ?) AS r JOIN chunks c ON c.id = r.id ORDER BY r.score"
)
_NEWEST = (
    "SELECT c.id, c.path, c.start, c.end, c.text, 0.0 FROM ("
    "SELECT rowid AS id FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid DESC LIMIT ?) AS r "
    "JOIN chunks c ON c.id = r.id ORDER BY c.id DESC"
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
)


_Prepared = tuple[str, int, int, str, "list[Chunk] | None"]  # path, size, mtime, hash, paragraphs (None: same)


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
        self._audit_result: tuple[Hidden | None, list[tuple[str, os.stat_result]]] | None = None
        self._since_audit: set[str] = set()
        self._known: dict[str, tuple[int, int, str]] = self.db.read(
            lambda conn: {row[0]: (row[1], row[2], row[3]) for row in conn.execute("SELECT * FROM files")}
        )

    def refresh(self, progress: Progress | None = None, *, hidden: Hidden | None = None) -> RefreshReport:
        """Re-index the files whose size or mtime changed (and whose hash then differs); drop deleted ones.

        Files ``hidden`` hides are dropped from the index like deleted ones; a new predicate (the deny
        globs changed) means a full walk.
        """
        with self._refresh_lock:
            now = time.monotonic()
            if hidden != self._hidden:
                self._hidden = hidden
                self._last_walk = float("-inf")
                self._audit_result = None
                self._since_audit = set()
            hidden = self._hidden
            touched = self._watch.take() if self._last_walk > float("-inf") else None
            audit = self._audit_result[1] if self._audit_result and self._audit_result[0] == hidden else None
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
                chunks = self.db.read(lambda conn: dict(conn.execute("SELECT id, text FROM chunks").fetchall()))
                self._semantic.sync(chunks)
                self._vectors_stale = False
            return RefreshReport(indexed, len(gone), len(self._known) - len(changed))

    def _start_audit(self, now: float, hidden: Hidden | None) -> None:
        if self._auditing:
            return
        self._auditing = True
        self._since_audit = set()
        self._last_walk = now

        def walk() -> None:
            try:
                self._audit_result = (hidden, list(memory_files(self.root, hidden=hidden)))
            except Exception:  # a failed audit is retried at the next period
                self._audit_result = None
            finally:
                self._auditing = False

        threading.Thread(target=walk, name="memory-audit", daemon=True).start()

    def _merge_audit(
        self, audit: list[tuple[str, os.stat_result]], touched: set[str]
    ) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
        """The audit's listing, with every path inotify reported since (or during) it stat-ed afresh."""
        fresh, gone_now = self._stat_touched(touched)
        candidates = [(relative, info) for relative, info in audit if relative not in touched] + fresh
        present = {relative for relative, _ in candidates}
        gone = [path for path in self._known if path not in present or path in gone_now]
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
        """Index in batches; the next batch is read and split in a thread while SQLite writes this one.

        SQLite releases the GIL while it tokenizes and writes, so on a first build of thousands of files
        the file reading and splitting overlaps it instead of adding to it.
        """
        if not changed:
            return 0
        from concurrent.futures import ThreadPoolExecutor

        batches = [changed[begin : begin + BATCH] for begin in range(0, len(changed), BATCH)]
        indexed = done = 0
        with ThreadPoolExecutor(1, thread_name_prefix="memory-read") as reader:
            upcoming = reader.submit(self._prepare, batches[0])
            for number, batch in enumerate(batches):
                prepared = upcoming.result()
                if number + 1 < len(batches):
                    upcoming = reader.submit(self._prepare, batches[number + 1])
                updates: dict[str, tuple[int, int, str]] = {}
                indexed += self.db.write(lambda conn, p=prepared, u=updates: self._index_batch(conn, p, u))  # type: ignore[misc]
                self._known.update(updates)  # only once committed: a rolled-back batch is read again next time
                done += len(batch)
                if progress is not None:
                    progress(done, len(changed))
        return indexed

    def _prepare(self, batch: list[tuple[str, int, int]]) -> list[_Prepared]:
        """Read, hash and split a batch before the write transaction, so the lock is held for inserts only."""
        prepared: list[_Prepared] = []
        for relative, size, mtime_ns in batch:
            try:
                data = (self.root / relative).read_bytes()
            except OSError:
                continue  # vanished or unreadable since the walk; the next refresh sees it again
            digest = hashlib.blake2b(data, digest_size=16).hexdigest()
            known = self._known.get(relative)
            if known is not None and known[2] == digest:
                prepared.append((relative, size, mtime_ns, digest, None))
            else:
                prepared.append((relative, size, mtime_ns, digest, split_paragraphs(data.decode("utf-8", "replace"))))
        return prepared

    def _index_batch(
        self, conn: sqlite3.Connection, prepared: list[_Prepared], updates: dict[str, tuple[int, int, str]]
    ) -> int:
        updates.clear()  # a retried transaction starts over
        # AUTOINCREMENT ids only grow: the rows this batch adds are exactly those above today's largest id.
        first_new = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
        touched: list[tuple[int, int, str]] = []
        replaced: list[tuple[str, int, int, str]] = []
        rows: list[tuple[str, int, int, str]] = []
        for relative, size, mtime_ns, digest, chunks in prepared:
            if chunks is None:
                touched.append((size, mtime_ns, relative))
            else:
                replaced.append((relative, size, mtime_ns, digest))
                rows.extend((relative, c.start, c.end, c.text) for c in chunks)
            updates[relative] = (size, mtime_ns, digest)
        conn.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", touched)
        # Another process may have indexed a file this one has not seen yet: replace, never duplicate.
        conn.executemany("DELETE FROM files WHERE path = ?", [(row[0],) for row in replaced])
        conn.executemany("INSERT INTO files VALUES (?, ?, ?, ?)", replaced)
        conn.executemany("INSERT INTO chunks (path, start, end, text) VALUES (?, ?, ?, ?)", rows)
        if rows:
            conn.execute("INSERT INTO chunks_fts (rowid, text) SELECT id, text FROM chunks WHERE id > ?", (first_new,))
        return len(replaced)

    def search(self, query: str, max_results: int = 6) -> list[MemoryHit]:
        terms = fts_terms(query)
        if not terms:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                "The query has no words to search for.",
                'Search for words, or a "quoted phrase".',
            )
        limit = max_results if self._semantic is None else max(50, max_results)
        rows = self.db.read(lambda conn: self._ranked(conn, terms, limit))
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
        fused = fuse([row[0] for row in bm25_rows], nearest)[:max_results]
        ids = [chunk_id for chunk_id, _ in fused]
        marks = ",".join("?" * len(ids))
        details = self.db.read(
            lambda conn: {
                row[0]: row[1:]
                for row in conn.execute(f"SELECT id, path, start, end, text FROM chunks WHERE id IN ({marks})", ids)  # noqa: S608 - placeholders only
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
