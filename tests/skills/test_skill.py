from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.skill_helpers import SAMPLES
from toolrig.skills.skill import SkillError, name_problems, parse_skill, read_skill, split_allowed_tools


def test_a_spec_skill_keeps_every_optional_field() -> None:
    skill = read_skill(SAMPLES / "pdf-forms", "project")
    assert skill.name == "pdf-forms"
    assert skill.license == "Apache-2.0"
    assert skill.compatibility == "Needs python3; no network access."
    assert skill.metadata == {"author": "toolrig-tests", "version": "1.2"}
    assert skill.allowed_tools == ("run_command(python3 scripts/*)", "read_files")
    assert skill.body.startswith("# Filling PDF forms")
    assert skill.warnings == ()


def test_claude_code_skill_splits_comma_separated_allowed_tools_and_keeps_extra_keys() -> None:
    skill = read_skill(SAMPLES / "release-notes", "user")
    assert skill.allowed_tools == ("Bash(git log:*)", "Bash(git describe:*)", "Read", "Grep")
    assert skill.extra["argument-hint"] == "[version]"
    assert skill.extra["disable-model-invocation"] is False
    assert skill.description.startswith("Draft release notes from the git history")
    assert "\n" not in skill.description


def test_allowed_tools_as_a_yaml_list_and_an_unquoted_colon_load_with_warnings() -> None:
    skill = read_skill(SAMPLES / "sql_helper", "project")
    assert skill.allowed_tools == ("code_search", "Bash(sqlite3:*)")
    assert skill.description.endswith("run on both SQLite and PostgreSQL")
    assert any("not valid YAML" in w for w in skill.warnings)
    assert any("lowercase letters" in w for w in skill.warnings)  # the underscore breaks the spec's rule
    assert skill.metadata == {}
    assert any("metadata.tags" in w for w in skill.warnings)


def test_a_skill_without_description_is_refused() -> None:
    with pytest.raises(SkillError, match="no description"):
        read_skill(SAMPLES / "no-description", "project")


def test_a_name_that_could_climb_out_of_its_folder_is_refused() -> None:
    with pytest.raises(SkillError, match="not usable"):
        read_skill(SAMPLES / "bad-name", "project")


def test_a_name_that_differs_from_its_folder_loads_with_a_warning() -> None:
    skill = read_skill(SAMPLES / "renamed-folder", "project")
    assert skill.name == "original-name"
    assert any("differs from its folder" in w for w in skill.warnings)


def test_text_without_front_matter_is_not_a_skill(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="front matter"):
        parse_skill(tmp_path, "# Just a heading\n", "project")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Read Grep", ("Read", "Grep")),
        ("Read, Grep,Bash(git add:*)", ("Read", "Grep", "Bash(git add:*)")),
        (["Read", "Bash(npm run test:*) Grep"], ("Read", "Bash(npm run test:*)", "Grep")),
        ("", ()),
        (None, ()),
        (42, ()),
    ],
)
def test_allowed_tools_split_in_every_spelling(value: object, expected: tuple[str, ...]) -> None:
    assert split_allowed_tools(value, []) == expected


@pytest.mark.parametrize("name", ["pdf", "a-b-c", "x1", "a" * 64])
def test_spec_names_pass(name: str) -> None:
    assert name_problems(name) == []


@pytest.mark.parametrize("name", ["", "-a", "a-", "a--b", "A", "a_b", "a" * 65, "a b", "ü"])
def test_names_the_spec_rejects_are_reported(name: str) -> None:
    assert name_problems(name)


@given(st.text(max_size=300))
def test_parsing_any_text_either_loads_or_refuses_cleanly(text: str) -> None:
    try:
        skill = parse_skill(Path("/skills/any"), text, "project")
    except SkillError:
        return
    assert skill.description.strip()
    assert "/" not in skill.name and ".." not in skill.name.split(".")
