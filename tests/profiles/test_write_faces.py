"""Every write face of every profile against the fixtures of its canonical tool (issue 38 item 3, writes).

A face's call and the same change made through the toolrig tool it stands for, each in a fresh copy of the
fixture, must end alike: the same bytes on disk (encoding, BOM, line endings and notebook JSON kept as
the tool keeps them), or the same error. Reads have their twin in test_seed_contracts.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.media_tools import make_notebook, tiny_png
from toolrig.profiles import NAMES, Face, get_profile
from toolrig.result import ToolResult
from toolrig.rig import Rig

WRITE_TOOLS = ("write_file", "edit", "str_replace", "apply_patch")
WRITE_FACES = sorted(
    (name, face.name) for name in NAMES for tool in WRITE_TOOLS for face in get_profile(name).faces_of(tool)
)

# name -> (bytes on disk before, or None: no file yet; the text to replace; its replacement; the codec of the file)
FIXTURES: dict[str, tuple[bytes | None, str, str, str]] = {
    "utf8.txt": ("h\xe9llo\nw\xf6rld\n".encode(), "w\xf6rld", "w\xf6rld \u2713", "utf-8"),
    "latin.txt": ("caf\xe9 ol\xe9\n".encode("latin-1"), "ol\xe9", "ola", "latin-1"),
    "crlf.txt": (b"one\r\ntwo\r\n", "two", "deux", "utf-8"),
    "bom.txt": (b"\xef\xbb\xbfhello\nthere\n", "there", "where", "utf-8-sig"),
    "book.ipynb": (make_notebook(), "print('hello')", "print('bye')", "utf-8"),
    "pic.png": (tiny_png(), "IHDR", "IHDX", "latin-1"),
    "blob.bin": (b"\x00\x01\x02\xff" * 10, "\x01", "\x02", "latin-1"),
    "new/deep/file.txt": (None, "", "fresh \u2603 text\n", "utf-8"),
}
MUST_WORK = {"utf8.txt", "latin.txt", "crlf.txt", "bom.txt", "book.ipynb"}  # the canonical tool edits these


def _line_with(data: bytes, codec: str, old: str) -> str | None:
    for line in data.decode(codec, errors="replace").splitlines():
        if old and old in line:
            return line
    return None


def canonical_call(tool: str, path: str, fixture: tuple[bytes | None, str, str, str]) -> dict[str, Any]:
    data, old, new, codec = fixture
    if tool == "write_file":
        return {"path": path, "content": new, "on_conflict": "overwrite"}
    if tool == "edit":
        return {"file_path": path, "old_string": old, "new_string": new}
    if tool == "str_replace":
        return {"path": path, "replacements": [{"old": old, "new": new}]}
    line = _line_with(data or b"", codec, old) or old
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{line}\n+{line.replace(old, new)}\n*** End Patch\n"
    return {"patch": patch}


def face_call(face: Face, path: str, fixture: tuple[bytes | None, str, str, str]) -> dict[str, Any]:
    """The change as the face's own system writes it."""
    _, old, new, _ = fixture
    props = face.schema["properties"]
    key = "file_path" if "file_path" in props else "path"
    if face.tool == "write_file":
        return {key: path, "content": new}
    if face.tool == "edit":
        return {key: path, "old_string": old, "new_string": new}
    if face.tool == "str_replace":
        if "edits" in props:  # Claude's MultiEdit
            return {key: path, "edits": [{"old_string": old, "new_string": new}]}
        return {key: path, "replacements": [{"old": old, "new": new}]}
    return canonical_call("apply_patch", path, fixture)


def run(
    root: Path, name: str, fixture: tuple[bytes | None, str, str, str], call: dict[str, Any], **rig: Any
) -> tuple[ToolResult, bytes | None]:
    root.mkdir()
    target = root / name
    if fixture[0] is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fixture[0])
    with Rig(root, config={"approvals": {"mode": "off"}}, **rig) as opened:
        result = opened.call_sync(next(iter(call)), call[next(iter(call))])
    return result, target.read_bytes() if target.exists() else None


@pytest.mark.parametrize(("profile", "face_name"), WRITE_FACES)
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_write_face_leaves_what_its_tool_leaves(tmp_path: Path, profile: str, face_name: str, name: str) -> None:
    face = get_profile(profile).face(face_name)
    assert face is not None
    fixture = FIXTURES[name]
    expected, expected_bytes = run(
        tmp_path / "canonical", name, fixture, {face.tool: canonical_call(face.tool, name, fixture)}
    )
    got, got_bytes = run(tmp_path / "face", name, fixture, {face.name: face_call(face, name, fixture)}, profile=profile)
    if name in MUST_WORK or face.tool == "write_file":
        assert not expected.is_error, expected
    assert got.is_error == expected.is_error, (got, expected)
    assert got.error_type == expected.error_type
    assert got_bytes == expected_bytes
    if not expected.is_error and face.tool != "write_file":
        codec = fixture[3]
        assert expected_bytes is not None and fixture[2] in expected_bytes.decode(codec)


ABSOLUTE_FACES = [
    (p, f)
    for p, f in WRITE_FACES
    if "file_path" in (get_profile(p).face(f) or Face("", "", "", {})).schema.get("properties", {})
]


@pytest.mark.parametrize(("profile", "face_name"), ABSOLUTE_FACES)
@pytest.mark.parametrize("name", ["crlf.txt", "latin.txt", "new/deep/file.txt"])
def test_claudes_absolute_file_path_writes_the_same_file(
    tmp_path: Path, profile: str, face_name: str, name: str
) -> None:
    """Claude Code's Write and Edit take absolute paths, as the seed's calls give them."""
    face = get_profile(profile).face(face_name)
    assert face is not None
    fixture = FIXTURES[name]
    expected, expected_bytes = run(
        tmp_path / "canonical", name, fixture, {face.tool: canonical_call(face.tool, name, fixture)}
    )
    call = face_call(face, str(tmp_path / "face" / name), fixture)
    got, got_bytes = run(tmp_path / "face", name, fixture, {face.name: call}, profile=profile)
    assert (got.is_error, got.error_type, got_bytes) == (expected.is_error, expected.error_type, expected_bytes)
