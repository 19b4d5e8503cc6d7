"""One name table: a foreign tool name means the same tool in a skill, an agent definition and a model's call."""

from __future__ import annotations

import pytest

from toolrig.agent.subagents.types import toolrig_tool_names
from toolrig.profiles import all_faces, tools_named
from toolrig.skills.allowed import to_patterns

FACES = sorted({(face.name, face.tool) for face in all_faces()})


@pytest.mark.parametrize(("name", "tool"), FACES)
def test_a_profile_name_means_its_tool_in_skills_and_agent_definitions(name: str, tool: str) -> None:
    assert tool in tools_named(name)
    patterns, notes = to_patterns([name], lambda offered: True)
    assert tool in patterns and notes == []
    tools, _ = toolrig_tool_names([name], [])
    assert tool in tools


def test_claude_codes_edit_rule_covers_every_file_editing_tool_and_ls_still_lists() -> None:
    assert set(tools_named("Edit")) == {"edit", "str_replace"}
    assert tools_named("MultiEdit") == ("str_replace",)
    assert tools_named("LS") == ("list_directory",)


def test_a_name_no_profile_uses_stands_for_nothing() -> None:
    assert tools_named("run_command") == ()
    assert tools_named("NoSuchTool") == ()
    patterns, _ = to_patterns(["run_command:git *"], lambda offered: True)
    assert patterns == ["run_command:git *"]
