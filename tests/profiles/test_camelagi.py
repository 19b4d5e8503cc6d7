from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.profile_contract import documented, raw, schema_differences
from toolrig.profiles import get_profile
from toolrig.rig import Rig

SPEC = documented("camelagi")
SDK = documented("claude")


@pytest.fixture
def camel(workspace: Path) -> Rig:
    (workspace / "MEMORY.md").write_text("# Decisions\n\nWe deploy on Fridays.\n\nCoffee is good.\n", encoding="utf-8")
    return Rig(workspace, config={}, profile="camelagi")


def test_camelagi_offers_the_sdk_tools_and_its_own_with_their_documented_schemas() -> None:
    profile = get_profile("camelagi")
    sdk = {name: SDK[name] for name in raw("camelagi")["_sdk"]}
    assert schema_differences(profile, {**SPEC, **sdk}) == []
    assert profile.face("MultiEdit") is None  # CamelAGI's allowedTools do not include it


def test_memory_search_and_get_speak_camel_case_and_answer_in_text(camel: Rig) -> None:
    found = camel.call_sync("memory_search", {"query": "deploy", "maxResults": None})
    assert not found.is_error and "deploy on Fridays" in found.output["result"]  # type: ignore[index]
    lines = camel.call_sync("memory_get", {"filePath": "MEMORY.md", "from": 3, "lines": 1})
    assert lines.output == {"result": "3: We deploy on Fridays."}


def test_apply_patch_answers_with_change_lines(camel: Rig) -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
    result = camel.call_sync("apply_patch", {"patch": patch})
    assert result.output == {"result": "A hello.txt"}


def test_cron_lists_jobs_with_null_optionals(camel: Rig) -> None:
    result = camel.call_sync("cron", {"action": "list", "id": None, "name": None})
    assert not result.is_error and result.output is not None and result.output["action"] == "list"
