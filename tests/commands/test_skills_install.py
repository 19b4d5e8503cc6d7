"""`toolrig skills install`: the skills the Codebuff seed names (mintlify, doc-reader, doc-author), one command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.skill_helpers import isolate_home
from toolrig.cli import app
from toolrig.config import set_trust
from toolrig.rig import Rig
from toolrig.sandbox.paths import toolrig_home
from toolrig.skills.bundled import SHIPPED

SEED_SKILLS = ("mintlify", "doc-reader", "doc-author")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def test_one_command_installs_the_seeds_skills_and_they_pass_the_spec_check(workspace: Path, home: Path) -> None:
    assert set(SEED_SKILLS) <= set(SHIPPED)
    code, out, err = run("skills", "install", *SEED_SKILLS, "--root", str(workspace))
    assert code == 0, err
    assert [line.split()[1] for line in out.splitlines()] == list(SEED_SKILLS)
    code, out, err = run("skills", "check", "--root", str(workspace))
    assert code == 0, out + err
    code, out, _ = run("skills", "list", "--root", str(workspace), "--json")
    listed = {json.loads(line)["name"]: json.loads(line) for line in out.splitlines()}
    assert set(SEED_SKILLS) <= set(listed) and all(listed[n]["scope"] == "user" for n in SEED_SKILLS)


@pytest.mark.parametrize("name", SEED_SKILLS)
def test_an_installed_skill_loads_through_the_codebuff_skill_face(workspace: Path, home: Path, name: str) -> None:
    assert run("skills", "install", name, "--root", str(workspace))[0] == 0
    with Rig(workspace, config={"approvals": {"mode": "off"}}, profile="codebuff") as rig:
        loaded = rig.call_sync("skill", {"skill_name": name})
    assert not loaded.is_error, loaded
    assert loaded.output is not None and len(loaded.output["value"]["instructions"]) > 500


def test_installing_twice_needs_force_and_project_installs_into_the_workspace(workspace: Path, home: Path) -> None:
    assert run("skills", "install", "doc-reader", "--root", str(workspace))[0] == 0
    code, _, err = run("skills", "install", "doc-reader", "--root", str(workspace))
    assert code == 1 and "--force" in err
    assert run("skills", "install", "doc-reader", "--force", "--root", str(workspace))[0] == 0
    assert run("skills", "install", "--all", "--project", "--root", str(workspace))[0] == 0
    assert sorted(p.name for p in (workspace / ".toolrig" / "skills").iterdir()) == sorted(SHIPPED)
    set_trust(workspace)
    code, out, _ = run("skills", "list", "--root", str(workspace), "--json")
    assert {json.loads(line)["scope"] for line in out.splitlines()} == {"project"}


def test_without_names_it_lists_what_ships_and_an_unknown_name_is_a_usage_error(workspace: Path, home: Path) -> None:
    code, out, _ = run("skills", "install", "--root", str(workspace))
    assert code == 0 and all(name in out for name in SEED_SKILLS)
    code, _, err = run("skills", "install", "mintlify", "../etc", "--root", str(workspace))
    assert code == 2 and "'../etc'" in err
    assert not (toolrig_home() / "skills" / "mintlify").exists()
