"""Documents that are more than text, read for a model: images, PDFs (text per page), Jupyter notebooks, web pages.

Trust model: the bytes come from the workspace, which a hostile repository may fill, or from a web server: every
parser here fails as a ``ToolError`` (``invalid_input``) naming the file, never with the parser's own exception,
and what it returns is bounded (pages per call, outputs per cell, characters per output). A web page too deeply
nested for the Markdown converter still gives its text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Literal

from toolrig.errors import ErrorType, ToolError

_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
MAX_OUTPUT_CHARS = 4000  # one notebook cell output, as text
MAX_OUTPUTS_PER_CELL = 20


def image_type(data: bytes) -> str | None:
    """The media type of a PNG, JPEG, GIF or WebP image by its first bytes (never by the file name)."""
    for signature, media_type in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


MAX_IMAGE_SIDE = 8000  # pixels: Anthropic refuses larger images outright, and one refusal fails the whole turn


def image_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) from the image's header, or None when the header is damaged.

    A file that only starts like an image would be sent to a provider that then refuses the whole request,
    so an image whose size cannot be read is treated as a binary file instead.
    """
    try:
        if media_type == "image/png":
            if data[12:16] != b"IHDR":
                return None
            width, height = struct.unpack(">II", data[16:24])
        elif media_type == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
        elif media_type == "image/webp":
            width, height = _webp_size(data)
        else:
            width, height = _jpeg_size(data)
    except (struct.error, ValueError):
        return None
    return (width, height) if width > 0 and height > 0 else None


def _webp_size(data: bytes) -> tuple[int, int]:
    kind = data[12:16]
    if kind == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L" and data[20:21] == b"\x2f":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    raise ValueError("no WebP image chunk")


def _jpeg_size(data: bytes) -> tuple[int, int]:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            raise ValueError("not a JPEG marker")
        marker = data[index + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            index += 1 if marker == 0xFF else 2
            continue
        length = struct.unpack(">H", data[index + 2 : index + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        if length < 2:
            raise ValueError("bad JPEG segment length")
        index += 2 + length
    raise ValueError("no JPEG frame header")


def is_pdf(data: bytes) -> bool:
    return data[:1024].lstrip(b"\x00\t\n\r\x0c ").startswith(b"%PDF-")


# ------------------------------------------------------------------------------------------ PDF

_RANGE = re.compile(r"^\s*(\d{1,6})\s*(?:-\s*(\d{1,6})?\s*)?$")


def page_numbers(spec: str | None, total: int, limit: int) -> list[int]:
    """1-based page numbers from '3', '1-5', '2-' or '1-3,7'; at most ``limit`` of them."""
    if total == 0:
        return []
    if spec is None or not spec.strip():
        return list(range(1, min(total, limit) + 1))
    chosen: list[int] = []
    for piece in spec.split(","):
        match = _RANGE.match(piece)
        if match is None:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"'{spec[:60]}' is not a page range.",
                "Give pages like '3', '1-5', '10-' or '1-3,7' (pages count from 1).",
            )
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else (total if "-" in piece else first)
        if first < 1 or last < first:
            raise ToolError(ErrorType.INVALID_INPUT, f"'{piece.strip()}' is not a page range (pages count from 1).")
        if first > total:
            raise ToolError(
                ErrorType.INVALID_INPUT, f"The PDF has {total} pages; page {first} is past its end.", "Ask for fewer."
            )
        chosen += [n for n in range(first, min(last, total) + 1) if n not in chosen]
        if len(chosen) > limit:
            raise ToolError(
                ErrorType.TOO_LARGE,
                f"'{spec[:60]}' asks for more than {limit} pages at once.",
                f"Read at most {limit} pages per call, e.g. pages='{chosen[0]}-{chosen[0] + limit - 1}'.",
            )
    return chosen


@dataclass
class PdfText:
    total: int
    pages: list[tuple[int, str]] = field(default_factory=list)


# A page of text inflates to a few KB of content stream and a dense one to a few hundred; past these a PDF is a
# decompression or complexity bomb (a 4.7 KB file whose one page inflates to 400 000 `Tj` operators took pypdf
# 36 s of CPU). Parsing a content stream cannot be interrupted, so its size is bounded before it is parsed; the
# extraction that follows is checked per operator (count, time, the call's cancellation), so it stops promptly.
MAX_PAGE_CONTENT = 512 * 1024  # inflated bytes of one page's content streams
MAX_PDF_CONTENT = 2 * 1024 * 1024  # inflated content bytes parsed per call, all pages together
MAX_PDF_OPERATIONS = 200_000  # content operators visited per call (form XObjects included)
MAX_PDF_SECONDS = 20.0  # per call: the pages after it are left for another call
MAX_PAGE_CHARS = 50_000  # extracted characters kept per page
MAX_FORM_INVOCATIONS = 500  # form XObjects drawn per page (pypdf's default is 5000)


class _Stop(Exception):
    """Raised from inside pypdf's extraction to end it: the page or the call is past a bound."""


def pdf_text(data: bytes, spec: str | None, limit: int, shown: str) -> PdfText:
    """The text of the chosen pages of a PDF (pypdf's layout-free extraction), within bounds of size and time.

    A page past a bound is not extracted and says why; the call's cancellation (a timeout) stops the work
    itself, not only the wait for it.
    """
    try:
        from pypdf import PdfReader, apply_configuration
        from pypdf.errors import LimitReachedError, PyPdfError
    except ImportError:
        raise ToolError(
            ErrorType.UNAVAILABLE,
            f"'{shown}' is a PDF, and reading PDFs needs pypdf, which is not installed.",
            "Ask the user to install it: pip install 'toolrig[pdf]'.",
            retryable=False,
        ) from None
    import io

    # A hostile PDF can break a parser in many ways; every one of them is this file's problem, not ours.
    broken = (PyPdfError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError,
              AssertionError, ZeroDivisionError, OverflowError, struct.error, zlib.error, UnicodeError)  # fmt: skip
    work = _PdfWork()
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ToolError(
                ErrorType.INVALID_INPUT, f"'{shown}' is an encrypted PDF.", "Ask the user for a decrypted copy."
            )
        result = PdfText(len(reader.pages))
        for number in page_numbers(spec, result.total, limit):
            work.check_cancelled()
            if work.left_over() is not None:
                result.pages.append((number, f"[not read: {work.left_over()}; read it with pages='{number}-']"))
                break
            page = reader.pages[number - 1]
            try:
                cap = min(MAX_PAGE_CONTENT, max(MAX_PDF_CONTENT - work.content, 0))
                with apply_configuration(
                    zlib_maximum_output_length=cap,
                    lzw_maximum_output_length=cap,
                    run_length_maximum_output_length=cap,
                    brotli_maximum_output_length=cap,
                    stream_decoding_work_maximum_length=4 * cap,
                ):
                    contents = page.get_contents()
                    size = len(contents.get_data()) if contents is not None else 0
                if size > cap:  # stored unfiltered: as costly to parse as an inflated one
                    raise LimitReachedError(f"{size} bytes of content")
            except LimitReachedError:
                why = f"its content inflates past {cap // 1024} KB, more than pages of text need"
                result.pages.append((number, f"[not extracted: {why}]"))
                work.content = MAX_PDF_CONTENT if cap < MAX_PAGE_CONTENT else work.content
                continue
            work.content += size
            with apply_configuration(xform_maximum_invocations_per_extraction=MAX_FORM_INVOCATIONS):
                try:
                    text = page.extract_text(visitor_operand_before=work.visit) or ""
                except _Stop:
                    text = f"[extraction stopped: {work.left_over() or 'the call was cancelled'}]"
            if len(text) > MAX_PAGE_CHARS:
                text = text[:MAX_PAGE_CHARS] + f"\n[page cut at {MAX_PAGE_CHARS} characters]"
            result.pages.append((number, text))
        work.check_cancelled()
    except broken as exc:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"'{shown}' cannot be read as a PDF: {type(exc).__name__}: {str(exc)[:200]}",
            "The file may be damaged; try another copy.",
        ) from None
    return result


class _PdfWork:
    """What one call has spent on a PDF: content bytes parsed, operators visited, time; and its cancellation."""

    def __init__(self) -> None:
        import time

        from toolrig.cancel import current_token

        self._clock = time.monotonic
        self.deadline = time.monotonic() + MAX_PDF_SECONDS
        self.token = current_token()  # read in the calling thread: worker threads inherit the call's context
        self.content = 0
        self.operations = 0

    def left_over(self) -> str | None:
        """Why the rest of the document is left for another call, if it is."""
        if self.content >= MAX_PDF_CONTENT:
            return f"this call parsed {MAX_PDF_CONTENT // 1024} KB of page content already"
        if self.operations >= MAX_PDF_OPERATIONS:
            return f"this call visited {MAX_PDF_OPERATIONS} content operators already"
        if self._clock() > self.deadline:
            return f"this call spent {MAX_PDF_SECONDS:g} s on the document already"
        return None

    def check_cancelled(self) -> None:
        if self.token is not None:
            self.token.raise_if_cancelled()

    def visit(self, *_: Any) -> None:
        self.operations += 1
        if self.operations % 64 == 0 or self.operations >= MAX_PDF_OPERATIONS:
            if self.token is not None and self.token.cancelled:
                raise _Stop
            if self.left_over() is not None:
                raise _Stop


def render_pdf(found: PdfText, shown: str) -> str:
    if not found.total:
        return f"[PDF] '{shown}' has no pages."
    numbers = [n for n, _ in found.pages]
    head = f"[PDF] '{shown}': pages {_ranges(numbers)} of {found.total}."
    if numbers and numbers[-1] < found.total:
        head += f" Read on with pages='{numbers[-1] + 1}-'."
    empty = "[no text on this page: it may be a scan]"
    body = [f"--- page {n} ---\n{text.strip() or empty}" for n, text in found.pages]
    return "\n\n".join([head, *body])


def _ranges(numbers: list[int]) -> str:
    spans: list[str] = []
    start = previous = numbers[0] if numbers else 0
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ",".join(spans)


# ------------------------------------------------------------------------------------------ notebooks


@dataclass
class Notebook:
    text: str
    images: list[tuple[str, bytes]] = field(default_factory=list)  # (media type, bytes) of image outputs


def notebook(data: bytes, shown: str) -> Notebook:
    """A Jupyter notebook (nbformat 4) as text: each cell's source, then its outputs; image outputs aside."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ToolError(ErrorType.INVALID_INPUT, f"'{shown}' is not a notebook: it is not valid JSON.") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise ToolError(ErrorType.INVALID_INPUT, f"'{shown}' is not a notebook: it has no list of cells.")
    found = Notebook("")
    lines: list[str] = []
    for index, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type") if isinstance(cell.get("cell_type"), str) else "cell"
        count = cell.get("execution_count")
        label = f"[cell {index}: {kind}" + (f", execution_count {count}]" if isinstance(count, int) else "]")
        lines += [label, _joined(cell.get("source"))]
        raw = cell.get("outputs")
        outputs: list[Any] = raw if isinstance(raw, list) else []
        for output in outputs[:MAX_OUTPUTS_PER_CELL]:
            if isinstance(output, dict):
                lines += _output(output, found)
        if len(outputs) > MAX_OUTPUTS_PER_CELL:
            lines.append(f"[{len(outputs) - MAX_OUTPUTS_PER_CELL} more outputs left out]")
        lines.append("")
    found.text = "\n".join(lines)
    return found


def _joined(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else f"{text[:MAX_OUTPUT_CHARS]}… [{len(text):,} characters]"


def _output(output: dict[str, Any], found: Notebook) -> list[str]:
    kind = output.get("output_type")
    if kind == "stream":
        return [f"[output: {output.get('name', 'stream')}]", _cut(_joined(output.get("text")).rstrip("\n"))]
    if kind == "error":
        lines = output.get("traceback")
        trace = "\n".join(line for line in lines if isinstance(line, str)) if isinstance(lines, list) else ""
        trace = re.sub(r"\x1b\[[0-9;]*m", "", trace)  # tracebacks come coloured with ANSI escapes
        return [f"[output: error {output.get('ename', '')}: {output.get('evalue', '')}]", _cut(trace)]
    data = output.get("data")
    bundle: dict[str, Any] = data if isinstance(data, dict) else {}
    for media_type in ("image/png", "image/jpeg", "image/gif"):
        encoded = _joined(bundle.get(media_type)).replace("\n", "")
        if encoded:
            try:
                found.images.append((media_type, base64.b64decode(encoded, validate=True)))
            except (binascii.Error, ValueError):
                return [f"[output: {media_type}, not valid base64]"]
            return [f"[output: {media_type}, image output {len(found.images)} of this notebook]"]
    for media_type in ("text/plain", "text/markdown", "application/json"):
        if media_type in bundle:
            value = bundle[media_type]
            text = json.dumps(value, ensure_ascii=False) if media_type == "application/json" else _joined(value)
            return [f"[output: {media_type}]", _cut(text.rstrip("\n"))]
    return [f"[output: {kind or 'unknown'}, {', '.join(map(str, bundle)) or 'no data'}]"]


# ------------------------------------------------------------------------------ web pages

_HTML_NEVER_SHOWN = ("script", "style", "noscript", "template", "head")
_HTML_CHROME = ("nav", "footer")


def html_text(html: str, form: Literal["markdown", "text"], *, drop_chrome: bool = False) -> str:
    """A web page as Markdown (or plain text); ``drop_chrome`` also removes navigation and footers.

    markdownify recurses once per level of nesting, so a page of a few thousand nested tags would end in a
    RecursionError: such a page is given as its plain text (BeautifulSoup walks the tree without recursing).
    CPU-bound (seconds for a megabyte of markup): callers run it in a worker thread, not on the event loop.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for node in soup([*_HTML_NEVER_SHOWN, *(_HTML_CHROME if drop_chrome else ())]):
        node.decompose()
    if form == "markdown":
        from markdownify import MarkdownConverter

        try:
            return str(MarkdownConverter(heading_style="ATX").convert_soup(soup)).strip() + "\n"
        except RecursionError:
            pass
    lines = (line.strip() for line in soup.get_text("\n").splitlines())
    return "\n".join(line for line in lines if line) + "\n"
