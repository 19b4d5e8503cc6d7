"""The documentation index behind read_docs: chunks of a site's pages in SQLite FTS5, ranked by BM25.

Trust model: page text is hostile and only ever travels as bound parameters; queries become FTS5
expressions that cannot be syntax errors (``fts_query``). One file, ``.toolrig/docs.db``, for every site.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from toolrig.stores.memory.chunking import fts_query
from toolrig.stores.sqlite import Database

FILE_NAME = "docs.db"
MAX_CHUNK_CHARS = 1_500
MIGRATIONS = [
    """
    CREATE TABLE sites (site TEXT PRIMARY KEY, fetched REAL NOT NULL, source TEXT NOT NULL, pages INTEGER NOT NULL);
    CREATE VIRTUAL TABLE chunks USING fts5 (site UNINDEXED, url UNINDEXED, heading, text, tokenize = 'porter');
    """
]
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


@dataclass(frozen=True, slots=True)
class Passage:
    url: str
    heading: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    markdown: str


def chunk(markdown: str) -> list[tuple[str, str]]:
    """(heading path, text) pieces: a section per heading, cut at paragraphs to at most MAX_CHUNK_CHARS."""
    pieces: list[tuple[str, str]] = []
    trail: list[str] = []
    paragraphs: list[str] = []

    def flush() -> None:
        heading = " > ".join(trail)
        current = ""
        for paragraph in paragraphs:
            while len(paragraph) > MAX_CHUNK_CHARS:
                if current:
                    pieces.append((heading, current))
                    current = ""
                pieces.append((heading, paragraph[:MAX_CHUNK_CHARS]))
                paragraph = paragraph[MAX_CHUNK_CHARS:]
            if current and len(current) + len(paragraph) + 2 > MAX_CHUNK_CHARS:
                pieces.append((heading, current))
                current = ""
            current = f"{current}\n\n{paragraph}" if current else paragraph
        if current:
            pieces.append((heading, current))
        paragraphs.clear()

    for block in re.split(r"\n\s*\n", markdown.replace("\r\n", "\n")):
        block = block.strip()
        if not block:
            continue
        match = _HEADING.match(block.split("\n", 1)[0])
        if match:
            flush()
            level = len(match.group(1))
            del trail[level - 1 :]
            trail.extend([""] * (level - 1 - len(trail)))
            trail.append(match.group(2).strip())
            rest = block.split("\n", 1)[1].strip() if "\n" in block else ""
            if rest:
                paragraphs.append(rest)
            continue
        paragraphs.append(block)
    flush()
    return [(h.strip(" >"), t) for h, t in pieces]


class DocIndex:
    def __init__(self, state_dir: Path) -> None:
        self.db = Database(state_dir / FILE_NAME, MIGRATIONS, lazy=True)

    def age(self, site: str) -> float | None:
        """Seconds since the site was indexed, or None when it never was."""
        row = self.db.read(lambda c: c.execute("SELECT fetched FROM sites WHERE site = ?", (site,)).fetchone())
        return None if row is None else time.time() - float(row[0])

    def replace(self, site: str, source: str, pages: list[Page]) -> int:
        """Swap the site's chunks for these pages' in one transaction; returns how many chunks."""
        rows = [(site, page.url, heading, text) for page in pages for heading, text in chunk(page.markdown)]

        def write(conn: object) -> None:
            conn.execute("DELETE FROM chunks WHERE site = ?", (site,))  # type: ignore[attr-defined]
            conn.executemany("INSERT INTO chunks (site, url, heading, text) VALUES (?, ?, ?, ?)", rows)  # type: ignore[attr-defined]
            conn.execute(  # type: ignore[attr-defined]
                "INSERT OR REPLACE INTO sites (site, fetched, source, pages) VALUES (?, ?, ?, ?)",
                (site, time.time(), source, len(pages)),
            )

        self.db.write(write)
        return len(rows)

    def search(self, sites: list[str], query: str, limit: int = 20) -> list[Passage]:
        expression = fts_query(query)
        if expression is None or not sites:
            return []
        marks = ", ".join("?" * len(sites))
        sql = (
            "SELECT url, heading, text, bm25(chunks, 0, 0, 2.0, 1.0) AS rank FROM chunks "  # noqa: S608 - placeholders only
            f"WHERE chunks MATCH ? AND site IN ({marks}) ORDER BY rank LIMIT ?"
        )
        rows = self.db.read(lambda c: c.execute(sql, (expression, *sites, limit)).fetchall())
        return [Passage(url, heading, text, -float(rank)) for url, heading, text, rank in rows]

    def close(self) -> None:
        self.db.close()
