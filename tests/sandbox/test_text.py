from __future__ import annotations

import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox.text import decode, divergence, hash_matches, numbered, sha256, split_lines, unified_diff


@pytest.mark.parametrize(
    ("raw", "encoding", "newline"),
    [
        (b"a\r\nb\r\n", "utf-8", "\r\n"),
        (b"a\nb\r\n", "utf-8", "\n"),
        (codecs.BOM_UTF8 + "é\n".encode(), "utf-8-sig", "\n"),
        ("x\r\ny\r\n".encode("utf-16"), "utf-16", "\r\n"),
        ("café\n".encode("latin-1"), "latin-1", "\n"),
    ],
)
def test_decode_detects_encoding_and_line_endings(raw: bytes, encoding: str, newline: str) -> None:
    text = decode(raw)
    assert text is not None and (text.encoding, text.newline) == (encoding, newline)
    assert text.encode(text.text) == raw


@pytest.mark.parametrize("raw", [b"\x00\x01\x02binary", bytes(range(1, 32)) * 20, b"\x89PNG\r\n\x1a\n\x00\x00"])
def test_binary_content_is_recognised(raw: bytes) -> None:
    assert decode(raw) is None


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=200))
def test_any_utf8_text_round_trips_byte_for_byte(text: str) -> None:
    raw = text.encode("utf-8")
    decoded = decode(raw)
    if decoded is not None:
        assert decoded.encode(decoded.text) == raw


def test_numbered_views_page_and_cut_long_lines() -> None:
    view, total, last = numbered("a\nb\nc\n" + "x" * 3000 + "\n", offset=2, limit=3)
    rows = view.split("\n")
    assert total == 4 and last == 4
    assert rows[0] == "     2\tb" and rows[2].startswith("     4\t" + "x" * 2000) and "line cut" in rows[2]


def test_lines_split_on_newline_only() -> None:
    assert split_lines("a\u2028b\x0cc\nd\n") == ["a\u2028b\x0cc", "d"]


def test_hash_prefixes_are_accepted_but_not_too_short() -> None:
    digest = sha256(b"x")
    assert hash_matches(digest, b"x") and hash_matches(digest[:8].upper(), b"x")
    assert not hash_matches(digest[:7], b"x") and not hash_matches(digest, b"y")


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("a\n", "a\nb", "f.txt")
    assert diff.startswith("--- a/f.txt\n+++ b/f.txt\n") and "\\ No newline at end of file" in diff
    assert unified_diff("", "new\n", "n.txt").startswith("--- /dev/null\n")


def test_divergence_names_the_first_differing_line() -> None:
    text = "def f():\n    x = 1\n    y = 2\n    return x\n"
    hint = divergence(text, "def f():\n    x = 1\n    y = 3\n")
    assert "line 3 differs" in hint and "'    y = 3'" in hint and "'    y = 2'" in hint


def test_divergence_suggests_close_lines_when_nothing_starts_matching() -> None:
    hint = divergence("alpha\nbeta_value = 10\n", "beta_valeu = 10")
    assert "closest lines" in hint and "line 2" in hint


def test_numbering_far_into_a_file_and_from_many_threads_stays_right() -> None:
    from concurrent.futures import ThreadPoolExecutor

    text = "".join(f"{n}\n" for n in range(1, 150_001))
    view, total, _ = numbered(text, offset=120_000, limit=2)
    assert view == "120000\t120000\n120001\t120001" and total == 150_000

    def check(offset: int) -> bool:
        rows = numbered(text, offset=offset, limit=300)[0].split("\n")
        return all(row.split("\t")[0].strip() == row.split("\t")[1] for row in rows)

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(check, range(1, 90_000, 7_001)))
