"""Content parts: what a tool result carries besides its JSON (images, audio, embedded resources).

The JSON output stays the contract every consumer reads; parts ride beside it for consumers that can show
them (Anthropic image blocks, MCP ``ImageContent``/``AudioContent``/``EmbeddedResource``, an OpenAI user
message with image parts). A tool attaches parts with ``ToolOutput.attach``; its JSON output should say in
words what it attached, so a consumer that drops parts (a terminal, a plain-text log) still tells the model.
Parts are built by trusted tool code from bytes it read; the checks here keep a broken or hostile file from
turning into a part a provider would reject (bad base64, a media type that is not one).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")
DEFAULT_MAX_IMAGE_BYTES = 5_000_000  # Anthropic's per-image limit; OpenAI's is higher


def _checked_base64(value: str) -> str:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("data must be standard base64") from None
    return value


def _checked_media_type(value: str) -> str:
    if not _MEDIA_TYPE.match(value):
        raise ValueError(f"{value[:80]!r} is not a media type like 'image/png'")
    return value


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Part):
    type: Literal["text"] = "text"
    text: str


class _Binary(_Part):
    data: str = Field(description="The bytes, base64-encoded.")
    media_type: str

    @field_validator("data")
    @classmethod
    def _base64(cls, value: str) -> str:
        return _checked_base64(value)

    @field_validator("media_type")
    @classmethod
    def _media_type(cls, value: str) -> str:
        return _checked_media_type(value)

    @property
    def size(self) -> int:
        """The decoded size in bytes (base64 holds three bytes in four characters)."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    @classmethod
    def of(cls, data: bytes, media_type: str) -> Self:
        return cls(data=base64.b64encode(data).decode("ascii"), media_type=media_type)


class ImagePart(_Binary):
    type: Literal["image"] = "image"


class AudioPart(_Binary):
    type: Literal["audio"] = "audio"


class ResourcePart(_Part):
    """An embedded resource: a URI with its text or its bytes (base64), as MCP's ``EmbeddedResource`` holds."""

    type: Literal["resource"] = "resource"
    uri: str = Field(min_length=1, max_length=2048)
    media_type: str | None = None
    text: str | None = None
    blob: str | None = Field(default=None, description="The bytes, base64-encoded, when the resource is not text.")

    @field_validator("blob")
    @classmethod
    def _base64(cls, value: str | None) -> str | None:
        return value if value is None else _checked_base64(value)

    @field_validator("media_type")
    @classmethod
    def _media_type(cls, value: str | None) -> str | None:
        return value if value is None else _checked_media_type(value)

    @model_validator(mode="after")
    def _one_body(self) -> Self:
        if (self.text is None) == (self.blob is None):
            raise ValueError("a resource part holds exactly one of text and blob")
        return self


ContentPart: TypeAlias = Annotated[TextPart | ImagePart | AudioPart | ResourcePart, Field(discriminator="type")]
# The image types every provider accepts in a tool result (Anthropic: these four; OpenAI and MCP: more).
PORTABLE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def describe(part: TextPart | ImagePart | AudioPart | ResourcePart) -> str:
    """One line naming a part, for consumers that cannot show it."""
    if isinstance(part, TextPart):
        return f"text ({len(part.text):,} characters)"
    if isinstance(part, ResourcePart):
        kind = part.media_type or ("text" if part.text is not None else "bytes")
        return f"resource {part.uri} ({kind})"
    return f"{part.type} ({part.media_type}, {part.size:,} bytes)"


def parts_to_json(parts: list[ContentPart]) -> list[dict[str, object]]:
    """Parts as plain JSON (sessions store them with the tool result they came with)."""
    return [part.model_dump(mode="json") for part in parts]


def parts_from_json(data: object) -> list[ContentPart]:
    """Parts stored by ``parts_to_json``; anything that no longer validates is dropped, never raised."""
    from pydantic import TypeAdapter, ValidationError

    if not isinstance(data, list):
        return []
    adapter: TypeAdapter[ContentPart] = TypeAdapter(ContentPart)
    parts: list[ContentPart] = []
    for item in data:
        try:
            parts.append(adapter.validate_python(item))
        except ValidationError:
            continue
    return parts
