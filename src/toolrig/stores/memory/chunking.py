"""Splitting memory files into the paragraphs that BM25 ranks, and making FTS5 queries out of model text."""

from __future__ import annotations

import re
from itertools import accumulate
from operator import methodcaller
from typing import NamedTuple

_HEADING = re.compile(r"^#{1,6}(\s|$)")
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_CHUNK_LINES = 80  # a paragraph longer than this is cut, so one hit never points at a whole file


class Chunk(NamedTuple):
    start: int  # first line, 1-based
    end: int  # last line, inclusive
    text: str


_BLOCK = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")  # a run of lines that are not blank
_BLOCKS = re.compile(f"({_BLOCK.pattern})")  # splitting on it keeps the runs: [gap, run, gap, run, ..., gap]
_INNER_HEADING = re.compile(r"\n#{1,6}(?:\s|$)", re.MULTILINE)
_NEWLINES = methodcaller("count", "\n")


def split_paragraphs(text: str) -> list[Chunk]:
    """Paragraphs: runs of non-blank lines; a markdown heading always starts a new one."""
    return list(map(Chunk, *paragraph_columns(text)))


def paragraph_columns(text: str) -> tuple[list[int], list[int], list[str]]:
    """``split_paragraphs`` as three columns (first lines, last lines, texts), ready to zip into rows.

    A first build splits ~100,000 paragraphs, so the common case runs without a Python step per
    paragraph: the regular expression finds the runs in C, and the line numbers are running sums of the
    newlines counted in each piece. A text with a carriage return, a run holding a heading after its
    first line, or a run of more than ``MAX_CHUNK_LINES`` lines takes the run-by-run split instead.
    """
    pieces = _BLOCKS.split(text)
    runs = pieces[1::2]
    newlines = list(map(_NEWLINES, pieces))
    if "\r" in text or (runs and max(newlines[1::2]) >= MAX_CHUNK_LINES) or any(map(_INNER_HEADING.search, runs)):
        chunks = _split_runs(text)
        return [c.start for c in chunks], [c.end for c in chunks], [c.text for c in chunks]
    lines = list(accumulate(newlines, initial=1))  # lines[i]: the line piece i starts on
    return lines[1::2], lines[2::2], runs


def _split_runs(text: str) -> list[Chunk]:
    """The run-by-run split; only a run with an inner heading, a carriage return or too many lines goes line by line."""
    chunks: list[Chunk] = []
    line = 1
    position = 0
    for match in _BLOCK.finditer(text):
        begin = match.start()
        line += text.count("\n", position, begin)
        block = match.group()
        lines = block.count("\n") + 1
        if lines > MAX_CHUNK_LINES or "\r" in block or _INNER_HEADING.search(block):
            chunks.extend(_split_lines(block, line))
        else:
            chunks.append(Chunk(line, line + lines - 1, block))
        line += lines - 1
        position = match.end()
    return chunks


def _split_lines(text: str, first: int = 1) -> list[Chunk]:
    chunks: list[Chunk] = []
    lines: list[str] = []
    start = 0

    def flush() -> None:
        if lines:
            chunks.append(Chunk(start, start + len(lines) - 1, "\n".join(lines)))
            lines.clear()

    # Only "\n" splits lines: splitlines() would also split on U+2028 and friends and shift line numbers.
    for number, line in enumerate(text.split("\n"), start=first):
        line = line.rstrip("\r")
        if not line.strip():
            flush()
            continue
        if _HEADING.match(line) or len(lines) >= MAX_CHUNK_LINES:
            flush()
        if not lines:
            start = number
        lines.append(line)
    flush()
    return chunks


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """The quoted phrases and the loose words of a query; every other character is ignored."""
    phrases: list[str] = []
    loose: list[str] = []
    parts = query.split('"')
    for index, part in enumerate(parts):
        words = _WORD.findall(part)
        # Odd parts sit between quotes; an unclosed quote (the last part) counts as loose words.
        if index % 2 == 1 and index < len(parts) - 1 and len(words) > 1:
            phrases.append(" ".join(words))
        else:
            loose.extend(words)
    return phrases, loose


def fts_terms(query: str) -> list[str]:
    """The query's phrases and words, each an FTS5 quoted string (so never a syntax error), duplicates dropped."""
    phrases, loose = query_terms(query)
    seen: set[str] = set()
    terms: list[str] = []
    for term in [*phrases, *loose]:
        folded = term.lower()
        if folded not in seen:
            seen.add(folded)
            terms.append('"' + term.replace('"', '""') + '"')
    return terms


# Words that carry no topic: in a question worded differently from the note, they are all BM25 can match, and
# those matches would crowd the embeddings' nearest paragraphs out of a hybrid search.
_STOPWORDS_TEXT = (
    "a about an and any are as at be been but by can could did do does for from get got had has have he her his how"
    " i if in into is it its me my no not now of on or our she should so than that the their them then there these"
    " they this those to up us was we were what when where which who whom why will with would you your"
)
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def content_terms(terms: list[str]) -> list[str]:
    """FTS5 terms without the stopwords; all of them if nothing else is left (a query of stopwords only)."""
    kept = [term for term in terms if term.strip('"').lower() not in STOPWORDS]
    return kept or terms


def fts_query(query: str) -> str | None:
    """An FTS5 MATCH expression that cannot be a syntax error: every term is a quoted string, ORed.

    Returns None when the query holds no word at all.
    """
    terms = fts_terms(query)
    return " OR ".join(terms) if terms else None


def snippet(text: str, query: str, limit: int = 500) -> str:
    """At most ``limit`` characters of ``text``, centred on the first place a query word appears."""
    if len(text) <= limit:
        return text
    phrases, loose = query_terms(query)
    lowered = text.lower()
    positions = [p for term in [*phrases, *loose] if (p := lowered.find(term.lower())) >= 0]
    first = min(positions, default=0)
    begin = max(0, min(first - limit // 4, len(text) - limit))
    piece = text[begin : begin + limit]
    if begin > 0:
        piece = "…" + piece[1:]
    if begin + limit < len(text):
        piece = piece[:-1] + "…"
    return piece
