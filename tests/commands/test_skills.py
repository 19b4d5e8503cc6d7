from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.skill_helpers import install_samples, isolate_home
from toolrig.cli import app


@pytest.fixture
def samples(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    return workspace


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_skills_list_shows_each_skill_and_warns_about_the_skipped(samples: Path) -> None:
    code, out, err = run("skills", "list", "--root", str(samples), "--json")
    assert code == 0
    names = sorted(json.loads(line)["name"] for line in out.splitlines())
    assert names == ["original-name", "pdf-forms", "release-notes", "sql_helper"]
    assert "no-description" in err


def test_skills_show_prints_the_instructions(samples: Path) -> None:
    code, out, _ = run("skills", "show", "pdf-forms", "--root", str(samples))
    assert code == 0
    assert "license: Apache-2.0" in out and "# Filling PDF forms" in out
    code, _, err = run("skills", "show", "missing", "--root", str(samples))
    assert code == 1 and "pdf-forms" in err


def test_skills_check_fails_on_any_problem_and_passes_on_clean_skills(samples: Path, workspace: Path) -> None:
    code, out, _ = run("skills", "check", "--root", str(samples))
    assert code == 1 and "no description" in out
    for broken in ("bad-name", "no-description", "renamed-folder", "sql_helper"):
        for file in (workspace / ".agents/skills" / broken).rglob("*"):
            if file.is_file():
                file.unlink()
    code, out, _ = run("skills", "check", "--root", str(samples))
    assert code == 0, out


def test_the_skill_tools_stay_reachable_under_toolrig_skills(samples: Path) -> None:
    code, out, _ = run("skills", "--help")
    assert code == 0 and "load_skill" in out and "check" in out
