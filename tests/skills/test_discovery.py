from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.skill_helpers import SAMPLES, install_samples, isolate_home
from toolrig.skills.discovery import discover


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def test_a_trusted_workspace_offers_its_skills_and_skips_the_broken_ones(workspace: Path) -> None:
    install_samples(workspace)
    found = discover(workspace, trusted=True)
    assert sorted(found.names()) == ["original-name", "pdf-forms", "release-notes", "sql_helper"]
    assert found.get("pdf-forms").scope == "project"  # type: ignore[union-attr]
    text = "\n".join(found.warnings)
    assert "no-description" in text and "bad-name" in text


def test_an_untrusted_workspace_skills_are_ignored_with_a_warning(workspace: Path) -> None:
    install_samples(workspace, ".claude/skills", trusted=False)
    found = discover(workspace, trusted=False)
    assert found.names() == []
    assert any("not trusted" in w and ".claude/skills" in w for w in found.warnings)


def test_project_skills_shadow_user_skills_of_the_same_name(workspace: Path, toolrig_home: Path) -> None:
    install_samples(workspace, ".toolrig/skills")
    user = toolrig_home / "skills" / "pdf-forms"
    user.mkdir(parents=True)
    (user / "SKILL.md").write_text("---\nname: pdf-forms\ndescription: the user's own copy\n---\nbody\n")
    found = discover(workspace, trusted=True)
    assert found.get("pdf-forms").scope == "project"  # type: ignore[union-attr]
    assert any("is taken by" in w for w in found.warnings)


def test_user_skills_in_agents_folder_and_config_paths_are_found(workspace: Path, home: Path, tmp_path: Path) -> None:
    user = home / ".agents" / "skills" / "pdf-forms"
    user.parent.mkdir(parents=True)
    (user.parent / "pdf-forms").symlink_to(SAMPLES / "pdf-forms")
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "release-notes").symlink_to(SAMPLES / "release-notes")
    found = discover(workspace, trusted=False, extra_paths=[str(extra)])
    assert [(s.name, s.scope) for s in found.skills.values()] == [("pdf-forms", "user"), ("release-notes", "config")]


def test_a_project_skill_linking_outside_the_workspace_is_skipped(workspace: Path, tmp_path: Path) -> None:
    folder = workspace / ".agents" / "skills"
    folder.mkdir(parents=True)
    (folder / "pdf-forms").symlink_to(SAMPLES / "pdf-forms")
    found = discover(workspace, trusted=True)
    assert found.names() == []
    assert any("links outside the workspace" in w for w in found.warnings)
