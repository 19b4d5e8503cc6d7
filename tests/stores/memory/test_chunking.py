from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.stores.memory.chunking import fts_query, snippet, split_paragraphs


def test_paragraphs_split_on_blank_lines_and_headings_with_their_line_numbers() -> None:
    text = "# Title\nintro line\n\nsecond para\nstill second\n## Sub\nunder sub\n\n\n"
    chunks = split_paragraphs(text)
    assert [(c.start, c.end, c.text) for c in chunks] == [
        (1, 2, "# Title\nintro line"),
        (4, 5, "second para\nstill second"),
        (6, 7, "## Sub\nunder sub"),
    ]


def test_paragraph_line_numbers_ignore_unicode_line_separators() -> None:
    chunks = split_paragraphs("a\u2028b\n\nc")
    assert [(c.start, c.end) for c in chunks] == [(1, 1), (3, 3)]


def test_query_keeps_quoted_phrases_and_drops_fts_operators_and_punctuation() -> None:
    assert fts_query('"release plan" AND (postgres*) -x') == '"release plan" OR "AND" OR "postgres" OR "x"'
    assert fts_query("?!--") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_query_text_is_valid_fts5_syntax(query: str) -> None:
    match = fts_query(query)
    if match is None:
        return
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('some text')")
    conn.execute("SELECT * FROM t WHERE t MATCH ?", (match,)).fetchall()


def test_snippet_is_at_most_the_limit_and_centred_on_a_match() -> None:
    text = "filler " * 200 + "the needle is here " + "filler " * 200
    piece = snippet(text, "needle", 500)
    assert len(piece) <= 500
    assert "needle" in piece


lines = st.sampled_from(
    ["", " ", "\t", "text", "more words", "# Head", "## h2", "#nohead", "a\r", "\r", "\u2028", "x y"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=200))
def test_the_fast_paragraph_split_matches_the_line_by_line_split(parts: list[str]) -> None:
    from toolrig.stores.memory.chunking import _split_lines

    text = "\n".join(parts)
    assert split_paragraphs(text) == _split_lines(text)


plain_lines = st.sampled_from(
    ["", " ", "\t", "text", "more words", "# Head", "## h2", "#nohead", "\u2028", "\x0b", "x y"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(plain_lines, max_size=200), st.integers(min_value=0, max_value=90))
def test_the_column_split_of_text_without_carriage_returns_matches_the_line_by_line_split(
    parts: list[str], long_run: int
) -> None:
    from toolrig.stores.memory.chunking import _split_lines

    text = "\n".join(parts + ["line"] * long_run)  # a run near MAX_CHUNK_LINES on either side of it
    assert split_paragraphs(text) == _split_lines(text)
