from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.profile_contract import documented, result_differences, schema_differences
from toolrig.profiles import get_profile
from toolrig.rig import Rig

SPEC = documented("codebuff")


@pytest.fixture
def codebuff(workspace: Path) -> Rig:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.ts").write_text("export const Foo = 1\n// foo here\n", encoding="utf-8")
    (workspace / "src" / "a.test.ts").write_text("test('foo')\n", encoding="utf-8")
    return Rig(workspace, config={}, profile="codebuff")


def test_every_codebuff_face_has_the_documented_schema() -> None:
    assert schema_differences(get_profile("codebuff"), SPEC) == []


def value_of(rig: Rig, name: str, args: dict[str, Any]) -> Any:
    result = rig.call_sync(name, args)
    assert not result.is_error, result.to_json()
    output = result.output or {}
    assert output["type"] == "json"
    spec = SPEC[name]["result"]
    if spec != "list":
        assert result_differences(spec, output["value"]) == []
    return output["value"]


def test_code_search_takes_flags_as_one_string_and_camel_case_limits(codebuff: Rig) -> None:
    found = value_of(codebuff, "code_search", {"pattern": "foo", "flags": "-i -g '*.test.ts'", "maxResults": 5})
    assert "a.test.ts" in found["stdout"] and "src/a.ts" not in found["stdout"]
    cut = value_of(codebuff, "code_search", {"pattern": "o", "maxOutputStringLength": 10})
    assert len(cut["stdout"]) == 10 and "maxOutputStringLength" in cut["message"]


def test_read_write_and_str_replace_round_trip_in_codebuff_shapes(codebuff: Rig) -> None:
    written = value_of(codebuff, "write_file", {"path": "b.ts", "instructions": "make b", "content": "let b = 1\n"})
    assert written["file"] == "b.ts" and written["unifiedDiff"].startswith("--- /dev/null")
    replaced = {"path": "b.ts", "replacements": [{"old": "1", "new": "2", "allowMultiple": False}]}
    value_of(codebuff, "str_replace", replaced)
    files = value_of(codebuff, "read_files", {"paths": ["b.ts", "missing.ts"]})
    assert files[0] == {"path": "b.ts", "content": "let b = 2\n"}
    assert files[1]["path"] == "missing.ts" and "DOES NOT EXIST" in files[1]["content"]


def test_run_terminal_command_reports_exit_code_and_background_needs_an_owner(codebuff: Rig) -> None:
    out = value_of(codebuff, "run_terminal_command", {"command": "echo out; exit 2", "timeout_seconds": 20})
    assert (out["stdout"], out["exitCode"]) == ("out\n", 2)
    alone = codebuff.call_sync("run_terminal_command", {"command": "true", "process_type": "BACKGROUND"})
    assert alone.is_error and "one-shot" in alone.message  # a direct call owns no background command


@pytest.mark.anyio
async def test_process_type_background_starts_a_background_command(codebuff: Rig) -> None:
    from toolrig.sandbox.background import BackgroundJobs
    from toolrig.scope import CallScope

    async with BackgroundJobs.open() as jobs:
        scope = CallScope(background=jobs)
        args = {"command": "echo up; sleep 600", "process_type": "BACKGROUND"}
        started = await codebuff.call("run_terminal_command", args, scope=scope)
        assert not started.is_error, started.to_json()
        process = (started.output or {})["value"]
        assert result_differences(SPEC["run_terminal_command"]["result"], process) == []
        assert process["backgroundProcessStatus"] == "running" and process["command"] == args["command"]
        listed = await codebuff.call("list_commands", {}, scope=scope)
        assert process["processId"] in str(listed.output)
        stopped = await codebuff.call("stop_command", {"id": process["processId"]}, scope=scope)
        assert not stopped.is_error, stopped.to_json()


def test_glob_list_directory_and_todos(codebuff: Rig) -> None:
    assert value_of(codebuff, "glob", {"pattern": "**/*.ts"})["count"] == 2
    listing = value_of(codebuff, "list_directory", {"path": "."})
    assert listing == {
        "files": [],
        "directories": ["src"],
        "path": ".",
        "results": [{"directory": ".", "files": [], "directories": ["src"], "count": 1}],
    }
    todos = [{"task": "a", "completed": True}, {"task": "b", "completed": False}]
    assert value_of(codebuff, "write_todos", {"todos": todos})["todos"] == todos
