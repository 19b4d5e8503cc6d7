"""The embedded librarian: files under ``.toolrig/librarian/<collection>/``, Saxon, SQLite FTS5.

XQuery runs in a Saxon child process that is killed when a query overruns its timeout.

Trust model: names are checked before they become paths; documents are checked by ``xml``; queries by
``guard``. The library lives in a state dir a cloned repository may have seeded, so every file is reached
without following symlinks (``statedir``), here and in the Saxon process, which reads only the files this
backend names and may open no URI itself.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.statedir import StatePath
from toolrig.stores.librarian.base import (
    MAX_RESULT_ITEMS,
    SearchHit,
    StoredDocument,
    check_collection,
    check_document_name,
    check_variables,
    scope,
    split_path,
)
from toolrig.stores.librarian.guard import guard
from toolrig.stores.librarian.names import MAX_DEPTH, SEGMENT
from toolrig.stores.librarian.saxon_worker import READY
from toolrig.stores.librarian.xml import check_document
from toolrig.stores.memory.chunking import fts_query, snippet
from toolrig.stores.sqlite import Database

INDEX_FILE = "index.sqlite"
STARTUP_SECONDS = 60.0  # loading Saxon in a fresh worker; a query's own timeout starts after it
MIGRATIONS = (
    """
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        collection TEXT NOT NULL,
        name TEXT NOT NULL,
        text TEXT NOT NULL,
        mtime_ns INTEGER NOT NULL,
        UNIQUE (collection, name)
    );
    CREATE VIRTUAL TABLE documents_fts USING fts5 (
        text, content = 'documents', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER documents_insert AFTER INSERT ON documents BEGIN
        INSERT INTO documents_fts (rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER documents_delete AFTER DELETE ON documents BEGIN
        INSERT INTO documents_fts (documents_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    """,
)


class EmbeddedLibrarian:
    def __init__(self, directory: Path, *, timeout: float = 10.0) -> None:
        self.directory = directory
        self.timeout = timeout
        self.state = StatePath.of(directory)
        os.close(self.state.open_dir())
        self.db = Database(directory / INDEX_FILE, MIGRATIONS)
        self._worker = SaxonWorker()
        self._reconcile()

    # ------------------------------------------------------------------ documents

    def store(self, collection: str, name: str, content: str) -> StoredDocument:
        collection = check_collection(collection)
        check_document_name(name)
        parsed = check_document(content)  # refuses lone surrogates too, so the encoding below cannot fail
        data = content.encode("utf-8")
        parts = collection.split("/")
        self._check_free(parts, name)
        replaced = self.state.lstat(*parts, name) is not None

        # The file is replaced inside the index transaction: if we die in between, _reconcile repairs it.
        def body(conn: Any) -> None:
            conn.execute("DELETE FROM documents WHERE collection = ? AND name = ?", (collection, name))
            self.state.write_bytes(*parts, name, data=data)
            written = self.state.lstat(*parts, name)
            conn.execute(
                "INSERT INTO documents (collection, name, text, mtime_ns) VALUES (?, ?, ?, ?)",
                (collection, name, parsed.text, written.st_mtime_ns if written else 0),
            )

        self.db.write(body)
        return StoredDocument(f"{collection}/{name}", len(data), replaced)

    def get(self, path: str) -> str:
        collection, name = split_path(path)
        try:
            return self.state.read_bytes(*collection.split("/"), name).decode("utf-8")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnicodeDecodeError):
            raise ToolError(
                ErrorType.NOT_FOUND, f"No document '{collection}/{name}'.", "librarian_search finds what is stored."
            ) from None

    def _check_free(self, parts: list[str], name: str) -> None:
        """A collection and a document cannot share a path: refuse before anything is written."""
        for depth in range(1, len(parts) + 1):
            info = self.state.lstat(*parts[:depth])
            if info is None:
                return
            if not stat.S_ISDIR(info.st_mode):
                raise ToolError(
                    ErrorType.CONFLICT,
                    f"'{'/'.join(parts[:depth])}' is a document, so it cannot hold a collection.",
                    "Store the document in another collection.",
                )
        info = self.state.lstat(*parts, name)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise ToolError(
                ErrorType.CONFLICT,
                f"'{'/'.join((*parts, name))}' is a collection, so no document can have that path.",
                "Choose another document name.",
            )

    def collections(self) -> list[str]:
        """Every collection that holds documents, nested ones as 'agents/greeter'."""
        return sorted({collection for collection, _, _ in self._walk("")})

    def _walk(self, collection: str) -> list[tuple[str, str, os.stat_result]]:
        """(collection, name, status) of every document in ``collection`` ('' for all) and below it."""
        found: list[tuple[str, str, os.stat_result]] = []
        pending = [collection]
        while pending:
            current = pending.pop()
            parts = current.split("/") if current else []
            for name, info in self.state.entries(*parts):
                if stat.S_ISDIR(info.st_mode) and SEGMENT.match(name) and len(parts) < MAX_DEPTH:
                    pending.append(f"{current}/{name}" if current else name)
                elif current and stat.S_ISREG(info.st_mode) and not name.startswith("."):
                    found.append((current, name, info))
        return found

    def _paths(self, collection: str) -> list[str]:
        """Paths relative to ``state.base`` (the worker walks them without following links)."""
        if collection:
            info = self.state.lstat(*collection.split("/"))
            if info is None or not stat.S_ISDIR(info.st_mode):
                raise _no_collection(collection)
        prefix = "/".join(self.state.parts)
        return sorted(f"{prefix}/{c}/{name}" for c, name, _ in self._walk(collection))

    def _reconcile(self) -> None:
        """Bring the full-text index in line with the files (after a crash between the two, or a fresh index)."""
        indexed = self.db.read(
            lambda conn: {(c, n): m for c, n, m in conn.execute("SELECT collection, name, mtime_ns FROM documents")}
        )
        on_disk = {(collection, name): info.st_mtime_ns for collection, name, info in self._walk("")}
        stale = [key for key, mtime in on_disk.items() if indexed.get(key) != mtime]
        gone = [key for key in indexed if key not in on_disk]
        if not stale and not gone:
            return

        def body(conn: Any) -> None:
            for collection, name in [*stale, *gone]:
                conn.execute("DELETE FROM documents WHERE collection = ? AND name = ?", (collection, name))
            for collection, name in stale:
                try:
                    text = check_document(self.state.read_bytes(*collection.split("/"), name).decode("utf-8")).text
                except (ToolError, OSError, UnicodeDecodeError):
                    continue
                conn.execute(
                    "INSERT INTO documents (collection, name, text, mtime_ns) VALUES (?, ?, ?, ?)",
                    (collection, name, text, on_disk[(collection, name)]),
                )

        self.db.write(body)

    # ------------------------------------------------------------------ queries

    def query(self, query: str, collection: str | None, variables: dict[str, Any]) -> list[str]:
        check_variables(variables)
        chosen = scope(collection)
        bindings: dict[str, list[str]] = {}
        named: dict[str, str] = {}  # collection -> its variable

        def rewrite_collection(name: str | None) -> str:
            target = chosen or "" if name is None else name
            if target not in named:
                named[target] = f"toolrig_c_{len(named)}"
                bindings[named[target]] = self._paths(target)
            return f"${named[target]}"

        def rewrite_document(coll: str, name: str) -> str:
            info = self.state.lstat(*coll.split("/"), name)
            if info is None or not stat.S_ISREG(info.st_mode):
                raise ToolError(ErrorType.NOT_FOUND, f"No document '{coll}/{name}'.")
            variable = f"toolrig_d_{len(bindings)}"
            bindings[variable] = ["/".join((*self.state.parts, coll, name))]
            return f"${variable}"

        guarded = guard(query, rewrite_collection=rewrite_collection, rewrite_document=rewrite_document)
        declarations = [
            f"declare variable ${name} external;" if paths else f"declare variable ${name} := ();"
            for name, paths in bindings.items()
        ] + guarded.externals(list(variables))
        request = {
            "query": guarded.with_declarations(declarations),
            "root": str(self.state.base),
            "documents": {name: paths for name, paths in bindings.items() if paths},
            "variables": variables,
        }
        items = self._worker.run(request, self.timeout)
        if len(items) > MAX_RESULT_ITEMS:
            raise ToolError(
                ErrorType.TOO_LARGE,
                f"The query returned {len(items):,} items.",
                "Narrow the query or use subsequence().",
            )
        return items

    def search(self, query: str, collection: str | None, num_results: int) -> list[SearchHit]:
        match = fts_query(query)
        if match is None:
            raise ToolError(
                ErrorType.INVALID_INPUT, "The search has no words.", 'Search for words or a "quoted phrase".'
            )
        sql = (
            "SELECT d.collection, d.name, d.text, bm25(documents_fts) FROM documents_fts "
            "JOIN documents d ON d.id = documents_fts.rowid WHERE documents_fts MATCH ?"
        )
        params: list[Any] = [match]
        chosen = scope(collection)
        if chosen is not None:
            # The collection and every collection below it; substr, not LIKE: '_' is a LIKE wildcard.
            sql += " AND (d.collection = ? OR substr(d.collection, 1, ?) = ?)"
            params += [chosen, len(chosen) + 1, chosen + "/"]
        sql += " ORDER BY bm25(documents_fts) LIMIT ?"
        params.append(num_results)
        rows = self.db.read(lambda conn: conn.execute(sql, params).fetchall())
        return [SearchHit(f"{c}/{n}", float(f"{-rank:.4g}"), snippet(text, query, 300)) for c, n, text, rank in rows]

    def close(self) -> None:
        self._worker.stop()
        self.db.close()


def _no_collection(name: str) -> ToolError:
    return ToolError(
        ErrorType.NOT_FOUND, f"There is no collection '{name}'.", "Store a document in it first with librarian_store."
    )


class SaxonWorker:
    """The Saxon child process: started on first use, killed and forgotten when a query overruns."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def run(self, request: dict[str, Any], timeout: float) -> list[str]:
        with self._lock:
            process = self._process if self._process is not None and self._process.poll() is None else self._start()
            if process.stdin is None or process.stdout is None:  # pragma: no cover - Popen made both pipes
                raise RuntimeError("the XQuery worker has no pipes")
            try:
                process.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
                process.stdin.flush()
                line = _read_line(process.stdout, timeout)
            except BrokenPipeError:
                line = None
            if line is None:
                self._kill()
                if process.returncode not in (None, -signal.SIGKILL):
                    raise ToolError(ErrorType.INTERNAL, "The XQuery engine stopped unexpectedly.", "Retry the query.")
                raise ToolError(
                    ErrorType.TIMEOUT,
                    f"The query ran longer than {timeout:g} seconds and was stopped.",
                    "Make the query cheaper (filter early, avoid nested loops over whole collections).",
                    retryable=False,
                )
        reply = json.loads(line)
        if "error" in reply:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The query failed: {reply['error'][:2000]}",
                "Fix the query at the position named and run it again.",
            )
        return list(reply["items"])

    def _start(self) -> subprocess.Popen[bytes]:
        import importlib.util

        if importlib.util.find_spec("saxonche") is None:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "The XQuery engine (saxonche) is not installed.",
                "Ask the user to install it: pip install 'toolrig[librarian]'.",
            )
        environment = {key: os.environ[key] for key in ("PATH", "PYTHONPATH", "LANG") if key in os.environ}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "toolrig.stores.librarian.saxon_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # Saxon repeats its errors there; the reply already carries them
            env=environment,
            cwd="/",
        )
        # A query's timeout is the query's: loading Saxon (seconds on a busy machine) is waited for here, so
        # the first query after a start, or after a runaway one was killed, is not refused as a timeout.
        ready = _read_line(self._process.stdout, STARTUP_SECONDS) if self._process.stdout is not None else None
        if ready is None or ready.decode("utf-8", "replace").strip() != READY:
            self._kill()
            raise ToolError(
                ErrorType.UNAVAILABLE,
                f"The XQuery engine did not start within {STARTUP_SECONDS:g} seconds.",
                "Retry the query; if it fails again, check that 'saxonche' imports: pip install 'toolrig[librarian]'.",
            )
        return self._process

    def _kill(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
            self._process = None

    def stop(self) -> None:
        with self._lock:
            self._kill()


def _read_line(stream: IO[bytes], timeout: float) -> bytes | None:
    """One reply line, or None if none came within ``timeout`` (or the worker died)."""
    deadline = time.monotonic() + timeout
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return None
            chunk = os.read(stream.fileno(), 1 << 16)
            if not chunk:
                return None
            buffer += chunk
            if buffer.endswith(b"\n"):
                return buffer
