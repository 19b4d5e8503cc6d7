"""Images, PDFs and notebooks as read_files reads them (issue 18 item 5): hostile bytes never crash a parser."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.media_tools import make_notebook, make_pdf, tiny_png
from toolrig.documents import image_size, image_type, notebook, page_numbers, pdf_text, render_pdf
from toolrig.errors import ToolError


def test_images_are_known_by_their_bytes_and_their_size_read_from_the_header() -> None:
    png = tiny_png(3, 5)
    assert image_type(png) == "image/png" and image_size(png, "image/png") == (3, 5)
    assert image_type(b"GIF89a\x02\x00\x04\x00") == "image/gif" and image_size(
        b"GIF89a\x02\x00\x04\x00", "image/gif"
    ) == (2, 4)
    assert image_type(b"\x89PNG\r\n\x1a\n") == "image/png" and image_size(b"\x89PNG\r\n\x1a\n", "image/png") is None
    assert image_type(b"just text") is None


@given(st.binary(max_size=64), st.sampled_from([b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF89a", b"RIFF\0\0\0\0WEBP"]))
def test_a_damaged_image_header_is_none_never_an_exception(tail: bytes, head: bytes) -> None:
    data = head + tail
    media_type = image_type(data)
    assert media_type is not None
    size = image_size(data, media_type)
    assert size is None or (size[0] > 0 and size[1] > 0)


@pytest.mark.parametrize(
    ("spec", "total", "expected"),
    [
        (None, 30, list(range(1, 21))),
        ("3", 5, [3]),
        ("2-4", 5, [2, 3, 4]),
        ("4-", 5, [4, 5]),
        ("1-2,5,2", 5, [1, 2, 5]),
    ],
)
def test_page_ranges(spec: str | None, total: int, expected: list[int]) -> None:
    assert page_numbers(spec, total, 20) == expected


@given(st.text(max_size=20), st.integers(0, 50))
def test_any_page_range_text_gives_pages_within_the_document_or_a_clear_error(spec: str, total: int) -> None:
    try:
        pages = page_numbers(spec, total, 20)
    except ToolError as err:
        assert err.error_type.value in ("invalid_input", "too_large")
    else:
        assert all(1 <= n <= total for n in pages) and len(pages) <= 20


def test_a_pdf_reads_as_text_per_page_with_a_pointer_to_the_rest() -> None:
    text = render_pdf(pdf_text(make_pdf(["Alpha", "Beta", "Gamma"]), "1-2", 20, "a.pdf"), "a.pdf")
    assert text.startswith("[PDF] 'a.pdf': pages 1-2 of 3. Read on with pages='3-'.")
    assert "--- page 1 ---\nAlpha" in text and "--- page 2 ---\nBeta" in text and "Gamma" not in text


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_hostile_pdf_bytes_are_a_clear_error_never_a_parser_exception(tail: bytes) -> None:
    data = b"%PDF-1.4\n" + tail
    try:
        pdf_text(data, None, 5, "bad.pdf")
    except ToolError as err:
        assert err.error_type.value == "invalid_input" and "bad.pdf" in err.message


def test_a_pdf_cut_in_the_middle_is_a_clear_error() -> None:
    whole = make_pdf(["Alpha", "Beta"])
    try:
        pdf_text(whole[: len(whole) // 2], None, 5, "cut.pdf")
    except ToolError as err:
        assert "cut.pdf" in err.message


def test_a_notebook_reads_as_cells_with_their_outputs_and_images_aside() -> None:
    book = notebook(make_notebook(image=tiny_png()), "n.ipynb")
    assert "[cell 1: markdown]\n# Title\nSome prose." in book.text
    assert "[cell 2: code, execution_count 1]\nprint('hello')\n[output: stdout]\nhello" in book.text
    assert "[output: image/png, image output 1 of this notebook]" in book.text
    assert "[output: error ZeroDivisionError: division by zero]\nZeroDivisionError: division by zero" in book.text
    assert book.images == [("image/png", tiny_png())]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["cells", "cell_type", "source", "outputs", "output_type", "data", "text", "image/png", "traceback", "name"]
    ), inner, max_size=5),
    max_leaves=30,
)  # fmt: skip


@given(_JSON)
def test_any_json_is_a_notebook_or_a_clear_error(document: object) -> None:
    try:
        book = notebook(json.dumps(document).encode(), "x.ipynb")
    except ToolError as err:
        assert err.error_type.value == "invalid_input"
    else:
        assert isinstance(book.text, str)
