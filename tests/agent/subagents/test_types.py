from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.agent.subagents.loading import load_agent_types
from toolrig.agent.subagents.types import (
    DefinitionProblem,
    parse_definition,
    split_front_matter,
)
from toolrig.config import config_from, set_trust

REVIEWER = """---
name: reviewer
description: Reviews code changes
tools: Read, Grep, Glob, mcp__github__get_pr, Agent(general)
disallowedTools: [Bash]
model: inherit
maxTurns: 5
color: cyan
---
You review code. Be terse.
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def test_a_claude_code_definition_reads_as_a_toolrig_agent_type(tmp_path: Path) -> None:
    kind = parse_definition(write(tmp_path, "reviewer.md", REVIEWER), "project")
    profile = kind.profile
    assert kind.name == "reviewer" and kind.description == "Reviews code changes"
    assert profile.tools == ["read_files", "code_search", "glob", "github/get_pr", "spawn_agents", "Task", "Agent"]
    assert profile.spawns == ["general"]
    assert profile.disallowed_tools == ["run_command"]
    assert profile.model is None and profile.max_turns == 5
    assert profile.system_prompt == "You review code. Be terse."


def test_project_definitions_are_ignored_with_a_warning_until_the_workspace_is_trusted(workspace: Path) -> None:
    write(workspace / ".claude" / "agents", "reviewer.md", REVIEWER)
    loaded = config_from({})
    untrusted = load_agent_types(workspace, loaded)
    assert untrusted.get("reviewer") is None
    assert any("not trusted" in w for w in untrusted.warnings)
    set_trust(workspace)
    trusted = load_agent_types(workspace, loaded)
    found = trusted.get("reviewer")
    assert found is not None and found.source == "project"


def test_config_beats_project_beats_user_and_every_type_says_where_it_came_from(
    workspace: Path, toolrig_home: Path
) -> None:
    set_trust(workspace)
    write(toolrig_home / "agents", "a.md", "---\ndescription: user a\n---\nA")
    write(toolrig_home / "agents", "b.md", "---\ndescription: user b\n---\nB")
    write(workspace / ".toolrig" / "agents", "b.md", "---\ndescription: project b\n---\nB")
    loaded = config_from({"agents": {"a": {"description": "config a"}}})
    found = load_agent_types(workspace, loaded)
    assert (found.types["a"].source, found.types["a"].description) == ("config", "config a")
    assert (found.types["b"].source, found.types["b"].description) == ("project", "project b")
    assert found.types["general"].source == "built-in"


def test_a_symlinked_definition_is_not_read(workspace: Path, tmp_path: Path) -> None:
    set_trust(workspace)
    secret = write(tmp_path / "elsewhere", "secret.md", "---\ndescription: secret\n---\nS")
    (workspace / ".toolrig" / "agents").mkdir(parents=True)
    (workspace / ".toolrig" / "agents" / "evil.md").symlink_to(secret)
    assert load_agent_types(workspace, config_from({})).get("evil") is None


@pytest.mark.parametrize(
    "text",
    [
        "---\nname: ../../etc\n---\nx",
        "---\n[unclosed\n---\nx",
        "---\nname: ok\n",
        "---\n- a list\n---\nx",
        "---\nmaxTurns: -3\n---\nx",
        "---\ntools: {a: 1}\n---\nx",
    ],
)
def test_a_broken_definition_is_refused_with_a_reason(tmp_path: Path, text: str) -> None:
    with pytest.raises(DefinitionProblem):
        parse_definition(write(tmp_path, "x.md", text))


@given(st.text(max_size=400))
def test_front_matter_parsing_never_fails_with_anything_but_a_definition_problem(text: str) -> None:
    try:
        meta, body = split_front_matter(text)
    except DefinitionProblem:
        return
    assert isinstance(meta, dict) and isinstance(body, str)
