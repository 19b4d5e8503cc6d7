"""Content parts (issue 20: tools return more than text) and how ToolResult carries them."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.media_tools import Snapshot, tiny_png
from toolrig.content import AudioPart, ImagePart, ResourcePart, TextPart, describe, parts_from_json, parts_to_json
from toolrig.registry import Registry
from toolrig.rig import Rig


@given(st.binary(max_size=300), st.sampled_from(["image/png", "image/jpeg", "audio/wav"]))
def test_a_binary_part_round_trips_its_bytes_and_knows_its_size(data: bytes, media_type: str) -> None:
    part = ImagePart.of(data, media_type)
    assert base64.b64decode(part.data) == data and part.size == len(data)
    assert parts_from_json(parts_to_json([part])) == [part]


@pytest.mark.parametrize(
    "make",
    [
        lambda: ImagePart(data="not base64!", media_type="image/png"),
        lambda: ImagePart(data="", media_type="png"),
        lambda: AudioPart(data="", media_type="audio/wav\nX-Evil: 1"),
        lambda: ResourcePart(uri="file:///x"),
        lambda: ResourcePart(uri="file:///x", text="a", blob=""),
        lambda: ResourcePart(uri="", text="a"),
    ],
)
def test_a_malformed_part_is_refused_when_built(make: object) -> None:
    with pytest.raises(ValidationError):
        make()  # type: ignore[operator]


def test_stored_parts_that_no_longer_validate_are_dropped_not_raised() -> None:
    kept = parts_from_json([{"type": "image", "data": "@@", "media_type": "image/png"}, {"type": "text", "text": "t"}])
    assert kept == [TextPart(text="t")]
    assert parts_from_json("nonsense") == []


def test_a_tool_attaches_parts_and_the_result_carries_them_beside_the_contract_json(workspace: object) -> None:
    rig = Rig(workspace, registry=Registry([Snapshot()]))  # type: ignore[arg-type]
    result = rig.call_sync("snapshot", {"kinds": ["image", "audio", "text"]})
    assert [p.type for p in result.content] == ["image", "audio", "resource"]
    assert base64.b64decode(result.content[0].data) == tiny_png()  # type: ignore[union-attr]
    assert "content" not in result.model_dump(mode="json") and "iVBOR" not in result.to_json()
    assert describe(result.content[0]).startswith("image (image/png, ")
