"""A tool that returns content parts (an image, audio, a text resource, a PDF blob), for the adapter tests."""

from __future__ import annotations

import base64
import struct
import zlib

from pydantic import Field

from toolrig.content import AudioPart, ImagePart, ResourcePart
from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    """A real, valid RGB PNG (providers and MCP clients may decode what they are sent)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"  # noqa: E501
PDF = b"%PDF-1.4\n%%EOF\n"


class SnapshotInput(ToolInput):
    kinds: list[str] = Field(default_factory=lambda: ["image"], description="image, audio, text, pdf")


class SnapshotOutput(ToolOutput):
    attached: list[str]


class Snapshot(Tool[SnapshotInput, SnapshotOutput]):
    name = "snapshot"
    group = "media"
    read_only = True
    description = "Return a picture (and optionally audio, a text resource and a PDF) as content parts."

    def execute(self, input: SnapshotInput, ctx: ToolContext) -> SnapshotOutput:
        out = SnapshotOutput(attached=input.kinds)
        for kind in input.kinds:
            if kind == "image":
                out.attach_content(ImagePart.of(tiny_png(), "image/png"))
            elif kind == "audio":
                out.attach_content(AudioPart.of(WAV, "audio/wav"))
            elif kind == "text":
                out.attach_content(ResourcePart(uri="file:///notes.txt", media_type="text/plain", text="hello"))
            elif kind == "pdf":
                blob = base64.b64encode(PDF).decode()
                out.attach_content(ResourcePart(uri="file:///a.pdf", media_type="application/pdf", blob=blob))
        return out


def make_pdf(pages: list[str]) -> bytes:
    """A valid PDF with one line of Helvetica text per page (pypdf extracts it back)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 20 50 Td ({text}) Tj ET".encode("latin-1")
        content_number = len(objects) + 1
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        page_number = len(objects) + 1
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents %d 0 R "
            b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
            % content_number
        )
        kids.append(page_number)
    return pdf_file(objects, kids)


def pdf_file(objects: list[bytes], kids: list[int]) -> bytes:
    """The file around ``objects`` (1: the catalog, 2: left for the page tree of ``kids``): header, xref, trailer."""
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def make_notebook(*, image: bytes | None = None) -> bytes:
    import json

    outputs: list[dict[str, object]] = [{"output_type": "stream", "name": "stdout", "text": ["hello\n"]}]
    if image is not None:
        outputs.append({"output_type": "display_data", "data": {"image/png": base64.b64encode(image).decode()}})
    cells = [
        {"cell_type": "markdown", "source": ["# Title\n", "Some prose."]},
        {"cell_type": "code", "execution_count": 1, "source": "print('hello')", "outputs": outputs},
        {
            "cell_type": "code",
            "execution_count": 2,
            "source": "1/0",
            "outputs": [
                {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                 "traceback": ["\x1b[31mZeroDivisionError\x1b[0m: division by zero"]},
            ],
        },
    ]  # fmt: skip
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).encode()
