"""Checking that a document is well-formed XML, and taking its text for full-text search.

Trust model: the document is hostile. It is parsed by expat with no DTD loading; a DOCTYPE that points
at an external file or declares entities is refused, so no engine that later loads it reads anything else.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from dataclasses import dataclass

from toolrig.errors import ErrorType, ToolError

MAX_DOCUMENT_BYTES = 20_000_000
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    root: str  # the root element's name
    text: str  # the character data, whitespace collapsed


def check_document(content: str) -> ParsedDocument:
    """Parse ``content``; raise ``invalid_input`` naming line and column when it is not well-formed."""
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: valid in JSON text, never in an XML document
        raise ToolError(
            ErrorType.INVALID_INPUT,
            "The document is not valid Unicode (it holds a lone surrogate).",
            "Send the document as well-formed UTF-8 text.",
        ) from None
    if size > MAX_DOCUMENT_BYTES:
        raise ToolError(
            ErrorType.TOO_LARGE,
            f"The document is {size:,} bytes; the limit is {MAX_DOCUMENT_BYTES:,}.",
            "Split it into several documents.",
        )
    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    pieces: list[str] = []
    root: list[str] = []

    def refuse_doctype(name: str, system_id: str | None, public_id: str | None, has_internal: int) -> None:
        if system_id or public_id:
            raise ToolError(
                ErrorType.DENIED,
                f"The document's DOCTYPE refers to an external file ({system_id or public_id}).",
                "Remove the DOCTYPE's SYSTEM/PUBLIC part: documents cannot pull in other files.",
            )

    def refuse_entity(name: str, *args: object) -> None:
        raise ToolError(
            ErrorType.DENIED,
            f"The document declares the entity '{name}'.",
            "Write the text out instead of declaring entities.",
        )

    def start(name: str, attributes: dict[str, str]) -> None:
        if not root:
            root.append(name)
        pieces.append(" ")  # element boundaries separate words: <title>Moby</title><p>Call ...

    def end(name: str) -> None:
        pieces.append(" ")

    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = pieces.append
    try:
        parser.Parse(content, True)
    except xml.parsers.expat.ExpatError as exc:
        message = xml.parsers.expat.ErrorString(exc.code) if exc.code else str(exc)
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The document is not well-formed XML: {message} at line {exc.lineno}, column {exc.offset + 1}.",
            "Fix the XML at that position (close every tag, escape & and < in text) and store it again.",
        ) from None
    return ParsedDocument(root[0] if root else "", _SPACES.sub(" ", "".join(pieces)).strip())
