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
