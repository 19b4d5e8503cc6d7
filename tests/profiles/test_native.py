from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.profile_contract import documented, result_differences, schema_differences
from toolrig.profiles import get_profile
from toolrig.rig import Rig

SPEC = documented("native")


@pytest.fixture
def native(workspace: Path) -> Rig:
    (workspace / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    return Rig(workspace, config={}, profile="native")


def test_every_native_face_has_the_documented_schema() -> None:
    assert schema_differences(get_profile("native"), SPEC) == []


def data_of(rig: Rig, name: str, args: dict[str, Any]) -> Any:
    result = rig.call_sync(name, args)
    assert not result.is_error, result.to_json()
    output = result.output or {}
    assert output["success"] is True and output["error"] is None
    assert result_differences(SPEC[name]["result"], output["data"]) == []
    return output["data"]


def test_read_file_returns_plain_text(native: Rig) -> None:
    assert data_of(native, "read_file", {"path": "notes.txt"})["content"] == "one\ntwo\n"


def test_write_file_reports_bytes_written_and_appends(native: Rig) -> None:
    assert data_of(native, "write_file", {"path": "out.txt", "content": "héllo"})["bytes_written"] == 6
    data_of(native, "write_file", {"path": "out.txt", "content": "!", "mode": "append"})
    assert (native.workspace.root / "out.txt").read_text(encoding="utf-8") == "héllo!"


def test_list_dir_entries_have_name_type_size_modified(native: Rig) -> None:
    (native.workspace.root / "sub").mkdir()
    data = data_of(native, "list_dir", {"pattern": "*.txt"})
    assert [e["name"] for e in data["entries"]] == ["notes.txt"]
    assert set(data["entries"][0]) == set(SPEC["list_dir"]["entry"])
    assert {e["type"] for e in data_of(native, "list_dir", {})["entries"]} == {"file", "directory"}


def test_key_value_faces_round_trip(native: Rig) -> None:
    data_of(native, "key_value_set", {"key": "k", "value": {"n": 1}})
    assert data_of(native, "key_value_get", {"key": "k"})["value"] == {"n": 1}
    assert data_of(native, "key_value_delete", {"key": "k"})["deleted"] is True


def test_an_encoding_read_files_does_not_take_yet_is_dropped_with_a_note_and_reported_truthfully(native: Rig) -> None:
    result = native.call_sync("read_file", {"path": "notes.txt", "encoding": "latin-1"})
    assert result.output is not None and result.output["data"]["encoding"] in ("latin-1", "utf-8")
    if result.output["data"]["encoding"] == "utf-8":
        assert any("'encoding'" in note for note in result.notes)
