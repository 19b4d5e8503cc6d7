from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.profile_contract import documented, result_differences, schema_differences
from toolrig.profiles import get_profile
from toolrig.rig import Rig

SPEC = documented("claude")


@pytest.fixture
def claude(workspace: Path) -> Rig:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.name\n", encoding="utf-8")
    (workspace / "README.md").write_text("hello\nHello again\n", encoding="utf-8")
    return Rig(workspace, config={}, profile="claude")


def test_every_claude_face_has_the_documented_schema() -> None:
    assert schema_differences(get_profile("claude"), SPEC) == []


def output_of(rig: Rig, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = rig.call_sync(name, args)
    assert not result.is_error, result.to_json()
    assert result_differences(SPEC[name]["result"], result.output or {}) == []
    return result.output or {}


def test_read_returns_the_file_as_claude_code_does_with_offset_and_limit(claude: Rig) -> None:
    out = output_of(
        claude, "Read", {"file_path": str(claude.workspace.root / "src" / "app.py"), "offset": 3, "limit": 1}
    )
    assert out["file"]["content"] == "def main():\n"
    assert (out["file"]["startLine"], out["file"]["numLines"]) == (3, 1)


def test_read_of_a_missing_file_is_a_not_found_error(claude: Rig) -> None:
    result = claude.call_sync("Read", {"file_path": "nope.py"})
    assert result.is_error and result.error_type == "not_found"


def test_write_then_edit_then_multiedit_change_the_file_and_report_hunks(claude: Rig) -> None:
    created = output_of(claude, "Write", {"file_path": "new.txt", "content": "a\nb\n"})
    assert created["type"] == "create" and created["structuredPatch"][0]["lines"] == ["+a", "+b"]
    edited = output_of(claude, "Edit", {"file_path": "new.txt", "old_string": "a", "new_string": "c"})
    assert edited["replaceAll"] is False and "-a" in edited["structuredPatch"][0]["lines"]
    multi = {
        "file_path": "new.txt",
        "edits": [{"old_string": "c", "new_string": "d"}, {"old_string": "b", "new_string": "e"}],
    }
    output_of(claude, "MultiEdit", multi)
    assert (claude.workspace.root / "new.txt").read_text(encoding="utf-8") == "d\ne\n"
    assert output_of(claude, "Write", {"file_path": "new.txt", "content": "z\n"})["type"] == "update"


def test_bash_timeout_is_milliseconds(claude: Rig) -> None:
    result = claude.call_sync("Bash", {"command": "sleep 5", "timeout": 300})
    assert not result.is_error
    assert result.output is not None and result.output["interrupted"] is True
    out = output_of(claude, "Bash", {"command": "echo hi; exit 3", "description": "say hi"})
    assert out["stdout"] == "hi\n" and out["returnCodeInterpretation"] == "exit code 3"


def test_bash_sandbox_switch_is_refused_with_a_note_and_background_needs_an_owner(claude: Rig) -> None:
    result = claude.call_sync("Bash", {"command": "true", "dangerouslyDisableSandbox": True})
    assert any("sandbox" in n for n in result.notes)
    alone = claude.call_sync("Bash", {"command": "true", "run_in_background": True})
    assert alone.is_error and "one-shot" in alone.message  # a direct call owns no background command


@pytest.mark.anyio
async def test_bash_in_the_background_is_read_with_bash_output_and_killed_with_kill_shell(claude: Rig) -> None:
    from toolrig.sandbox.background import BackgroundJobs
    from toolrig.scope import CallScope

    async with BackgroundJobs.open() as jobs:
        scope = CallScope(background=jobs)

        async def face(name: str, args: dict[str, Any]) -> dict[str, Any]:
            result = await claude.call(name, args, scope=scope)
            assert not result.is_error, result.to_json()
            assert result_differences(SPEC[name]["result"], result.output or {}) == []
            return result.output or {}

        started = await face("Bash", {"command": "echo up; sleep 600", "run_in_background": True})
        shell = started["backgroundTaskId"]
        read = await claude.call("BashOutput", {"bash_id": shell, "filter": "up"}, scope=scope)
        assert any("filter" in n for n in read.notes)
        output = await face("BashOutput", {"bash_id": shell})
        assert output["shellId"] == shell and output["status"] == "running"
        killed = await face("KillShell", {"shell_id": shell})
        assert killed["shell_id"] == shell
        assert (await face("BashOutput", {"bash_id": shell}))["status"] == "killed"


def test_grep_defaults_to_file_names_and_speaks_its_flags(claude: Rig) -> None:
    out = output_of(claude, "Grep", {"pattern": "hello", "-i": True})
    assert out == {"mode": "files_with_matches", "numFiles": 1, "filenames": ["README.md"]}
    content = output_of(claude, "Grep", {"pattern": "def", "output_mode": "content", "-B": 1, "glob": "*.py"})
    assert "src/app.py:3: def main():" in content["content"] and content["numLines"] == 2
    counted = output_of(claude, "Grep", {"pattern": "o", "output_mode": "count", "type": "py"})
    assert counted["numMatches"] >= 1
    limited = output_of(claude, "Grep", {"pattern": ".", "output_mode": "content", "head_limit": 1, "offset": 1})
    assert limited["numLines"] == 1 and limited["appliedLimit"] == 1 and limited["appliedOffset"] == 1


def test_glob_and_todowrite_answer_in_claude_shapes(claude: Rig) -> None:
    assert output_of(claude, "Glob", {"pattern": "**/*.py"})["filenames"] == ["src/app.py"]
    todos = [{"content": "ship", "status": "in_progress", "activeForm": "Shipping"}]
    assert output_of(claude, "TodoWrite", {"todos": todos})["newTodos"] == todos


def test_a_bad_argument_is_explained_in_the_faces_own_parameters(claude: Rig) -> None:
    result = claude.call_sync("Bash", {"command": "true", "timeout": "soon"})
    assert result.is_error and result.error_type == "invalid_input"
    assert "'timeout'" in (result.next_action_hint or "") and "Bash" in (result.next_action_hint or "")


def test_tools_lists_the_claude_names_and_keeps_tools_claude_lacks(claude: Rig) -> None:
    names = [t.name for t in claude.tools()]
    assert {"Read", "Write", "Edit", "MultiEdit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch", "TodoWrite"} <= set(
        names
    )
    assert "run_command" not in names and "read_files" not in names
    assert "calculate" in names


def test_a_documented_parameter_toolrig_lacks_is_a_note_and_a_misspelt_one_an_error(claude: Rig) -> None:
    schema = claude.executor.registry.get("read_files").input_schema()
    result = claude.call_sync("Read", {"file_path": "README.md", "pages": "1-2"})
    assert not result.is_error
    if "pages" not in schema["properties"]:
        assert any("'pages'" in note for note in result.notes)
    wrong = claude.call_sync("Read", {"file_path": "README.md", "page": "1"})
    assert wrong.is_error and wrong.error_type == "invalid_input"
