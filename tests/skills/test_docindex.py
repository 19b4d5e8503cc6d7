from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from toolrig.skills.docindex import MAX_CHUNK_CHARS, DocIndex, Page, chunk


def test_chunks_carry_their_heading_path() -> None:
    text = "# A\n\nintro\n\n## B\n\nbee text\n\n### C\n\nsee text\n\n## D\n\ndee"
    assert chunk(text) == [("A", "intro"), ("A > B", "bee text"), ("A > B > C", "see text"), ("A > D", "dee")]


@given(st.lists(st.sampled_from(["a", "b", " ", "#", "\n", "word", "\n\n", "é"]), max_size=350).map("".join))
def test_chunking_keeps_every_word_and_caps_each_piece(text: str) -> None:
    pieces = chunk(text)
    assert all(len(body) <= MAX_CHUNK_CHARS for _, body in pieces)
    kept = " ".join(f"{heading} {body}" for heading, body in pieces)
    for word in text.split():
        if word.strip("#"):
            assert word.strip("#") in kept


def test_any_query_text_is_safe_to_search(tmp_path: Path) -> None:
    index = DocIndex(tmp_path)
    index.replace("s", "test", [Page("u", "# T\n\nalpha beta")])
    for query in ['"', "NEAR(", "a OR", "*", "-x", "alpha"]:
        index.search(["s"], query)
    assert index.search(["s"], "alpha")[0].url == "u"
    index.close()
