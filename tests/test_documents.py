"""Images, PDFs and notebooks as read_files reads them (issue 18 item 5): hostile bytes never crash a parser."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.media_tools import make_notebook, make_pdf, pdf_file, tiny_png
from toolrig.documents import html_text, image_size, image_type, notebook, page_numbers, pdf_text, render_pdf
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


# ------------------------------------------------------------------ PDF bombs: bounded output, bounded work (F5)


def encoded(content: bytes, filters: list[str]) -> tuple[bytes, bytes]:
    """``content`` encoded by ``filters`` (applied so that a reader decodes them in the order listed)."""
    data = content
    for name in reversed(filters):
        data = zlib.compress(data, 9) if name == "FlateDecode" else base64.a85encode(data, adobe=True)[2:]
    names = b" ".join(b"/" + n.encode() for n in filters)
    return data, (b" /Filter [" + names + b"]" if filters else b"")


def bomb_pdf(page_contents: list[bytes], filters: list[str], form: bytes | None = None) -> bytes:
    """Pages whose content streams are ``page_contents`` (encoded by ``filters``); an optional form XObject /X0."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    resources = b"/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>"
    if form is not None:
        data, filter_entry = encoded(form, filters)
        objects.append(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << %s >> /Length %d%s >>"
            % (resources, len(data), filter_entry)
            + b"\nstream\n%s\nendstream" % data
        )
        resources += b" /XObject << /X0 %d 0 R >>" % len(objects)
    kids = []
    for content in page_contents:
        data, filter_entry = encoded(content, filters)
        objects.append(b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), filter_entry, data))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Resources << %s >> /Contents %d 0 R >>"
            % (resources, len(objects))
        )
        kids.append(len(objects))
    return pdf_file(objects, kids)


def shows(n: int) -> bytes:
    return b"BT /F1 1 Tf " + b"(A) Tj " * n + b"ET"


def test_the_reported_pdf_bomb_is_not_parsed_and_says_why() -> None:
    """1.6 KB whose one page inflates to 100 000 `Tj` (5.6 s of pypdf before): refused before parsing."""
    data = bomb_pdf([shows(100_000)], ["FlateDecode"])
    assert len(data) < 3000
    found = pdf_text(data, None, 20, "bomb.pdf")
    [(number, text)] = found.pages
    assert number == 1 and text.startswith("[not extracted: its content inflates past 512 KB")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from([10, 500, 2_000, 4_000, 40_000, 400_000]), min_size=1, max_size=6),
    st.sampled_from([[], ["FlateDecode"], ["FlateDecode", "FlateDecode"], ["ASCII85Decode", "FlateDecode"]]),
)
def test_any_pdf_bomb_gives_bounded_text_per_page_and_bounded_content_per_call(
    sizes: list[int], filters: list[str]
) -> None:
    """Bounds scaled down (16 KB a page, 40 KB a call, 5 000 characters) so the property runs in seconds."""
    from toolrig import documents

    scaled = {"MAX_PAGE_CONTENT": 16 * 1024, "MAX_PDF_CONTENT": 40 * 1024, "MAX_PAGE_CHARS": 5_000}
    saved = {name: getattr(documents, name) for name in scaled}
    for name, value in scaled.items():
        setattr(documents, name, value)
    try:
        check_bounds(sizes, filters)
    finally:
        for name, value in saved.items():
            setattr(documents, name, value)


def check_bounds(sizes: list[int], filters: list[str]) -> None:
    from toolrig import documents

    data = bomb_pdf([shows(n) for n in sizes], filters)
    work: list[Any] = []
    original = documents._PdfWork

    class Watched(original):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            work.append(self)

    documents._PdfWork = Watched  # type: ignore[misc]
    try:
        found = pdf_text(data, None, 20, "bomb.pdf")
    finally:
        documents._PdfWork = original  # type: ignore[misc]
    [spent] = work
    assert spent.content <= documents.MAX_PDF_CONTENT + documents.MAX_PAGE_CONTENT
    assert spent.operations <= documents.MAX_PDF_OPERATIONS
    for (_, text), n in zip(found.pages, sizes, strict=False):
        assert len(text) <= documents.MAX_PAGE_CHARS + 100
        inflated = len(shows(n))
        if inflated > documents.MAX_PAGE_CONTENT:
            assert text.startswith("[not"), text[:80]  # never parsed
    assert len(found.pages) <= len(sizes)


def test_a_form_xobject_drawn_over_and_over_stops_at_the_operator_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrig import documents

    monkeypatch.setattr(documents, "MAX_PDF_OPERATIONS", 5_000)
    data = bomb_pdf([b"/X0 Do " * 3_000], ["FlateDecode"], form=shows(200))
    [(_, text)] = pdf_text(data, None, 20, "forms.pdf").pages
    assert text.startswith("[extraction stopped: this call visited 5000 content operators")


def test_a_cancelled_call_stops_the_extraction_itself_not_only_the_wait() -> None:
    """The executor abandons a timed-out worker thread; the thread must stop working too."""
    from toolrig import documents
    from toolrig.cancel import CancelToken, bind_token

    token = CancelToken()
    reset = bind_token(token)
    visits: list[int] = []
    original = documents._PdfWork.visit

    def visit(self: Any, *args: Any) -> None:
        visits.append(1)
        if len(visits) == 100:
            token.cancel("timed out")  # what the executor does when the call's time is up
        original(self, *args)

    documents._PdfWork.visit = visit  # type: ignore[method-assign]
    try:
        found = pdf_text(bomb_pdf([shows(20_000)], ["FlateDecode"]), None, 20, "slow.pdf")
    except ToolError as exc:
        assert exc.error_type.value == "cancelled"
    else:  # pragma: no cover - the check after the page raises
        raise AssertionError(found)
    finally:
        documents._PdfWork.visit = original  # type: ignore[method-assign]
        from toolrig.cancel import _current

        _current.reset(reset)
    assert len(visits) <= 100 + 64  # stopped within one check interval, not after 20 000 operators


def test_pages_past_the_calls_content_bound_are_left_for_the_next_call_with_a_pointer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolrig import documents

    monkeypatch.setattr(documents, "MAX_PDF_CONTENT", 64 * 1024)
    data = bomb_pdf([shows(2_000)] * 8, ["FlateDecode"])  # 14 KB each: four fit in 64 KB
    found = pdf_text(data, None, 20, "big.pdf")
    last_number, last = found.pages[-1]
    assert last.startswith("[not read: this call parsed 64 KB") and f"pages='{last_number}-'" in last
    assert 1 < len(found.pages) < 8


# ------------------------------------------------------------------------------ web pages


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.integers(0, 4000),
    tag=st.sampled_from(["div", "span", "b", "ul", "li", "table", "blockquote", "a", "p", "em"]),
    form=st.sampled_from(["markdown", "text"]),
)
def test_a_web_page_nested_to_any_depth_gives_its_text(depth: int, tag: str, form: Any) -> None:
    """markdownify recurses per level: a hostile page nested deeper than that still converts, never raises."""
    page = f"<html><body>{f'<{tag}>' * depth}leafword{f'</{tag}>' * depth}</body></html>"
    text = html_text(page, form)
    assert "leafword" in text


def test_a_web_page_loses_scripts_styles_and_with_drop_chrome_its_navigation() -> None:
    page = "<html><head><style>p{}</style></head><body><nav>menu</nav><script>x()</script><p>body</p></body></html>"
    assert html_text(page, "markdown").strip() == "menu\n\nbody"
    assert html_text(page, "markdown", drop_chrome=True).strip() == "body"
