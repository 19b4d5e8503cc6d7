from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from toolrig.skills.docindex import MAX_CHUNK_CHARS, DocIndex, Page, chunk


def test_chunks_carry_their_heading_path() -> None:
    text = "# A\n\nintro\n\n## B\n\nbee text\n\n### C\n\nsee text\n\n## D\n\ndee"
    assert chunk(text) == [("A", "intro"), ("A > B", "bee text"), ("A > B > C", "see text"), ("A > D", "dee")]


@given(st.lists(st.sampled_from(["a", "b", " ", "\n", "word", "\n\n", "é"]), max_size=350).map("".join))
def test_chunking_keeps_every_word_of_the_text(text: str) -> None:
    kept = " ".join(body for _, body in chunk(text))
    assert kept.split() == text.split()


@given(st.lists(st.sampled_from(["a", " ", "#", "## ", "\n", "\n\n", "x" * 400]), max_size=60).map("".join))
def test_no_chunk_is_longer_than_the_cap(text: str) -> None:
    assert all(len(body) <= MAX_CHUNK_CHARS for _, body in chunk(text))


def test_any_query_text_is_safe_to_search(tmp_path: Path) -> None:
    index = DocIndex(tmp_path)
    index.replace("s", "test", [Page("u", "# T\n\nalpha beta")])
    for query in ['"', "NEAR(", "a OR", "*", "-x", "alpha"]:
        index.search(["s"], query)
    assert index.search(["s"], "alpha")[0].url == "u"
    index.close()
