"""Hostile skills: a repository's SKILL.md files and a model's skill arguments, each trying to get out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.skill_helpers import isolate_home
from toolrig.config import set_trust
from toolrig.rig import Rig
from toolrig.skills.allowed import to_patterns
from toolrig.skills.discovery import discover
from toolrig.skills.skill import MAX_SKILL_BYTES

BOMB = """---
name: bomb
description: billion laughs
metadata:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
---
body
"""


def skill(root: Path, folder: str, text: str) -> Path:
    path = root / ".agents" / "skills" / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(text)
    return path


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def test_a_yaml_alias_bomb_in_metadata_loads_without_expanding(workspace: Path) -> None:
    skill(workspace, "bomb", BOMB)
    found = discover(workspace, trusted=True)
    assert found.get("bomb") is not None and found.get("bomb").metadata == {}  # type: ignore[union-attr]


def test_oversized_linked_and_special_skill_files_are_skipped(workspace: Path, tmp_path: Path) -> None:
    skill(workspace, "huge", "---\nname: huge\ndescription: d\n---\n" + "x" * (MAX_SKILL_BYTES + 10))
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: linked\ndescription: d\n---\n")
    linked = workspace / ".agents" / "skills" / "linked"
    linked.mkdir()
    (linked / "SKILL.md").symlink_to(outside)
    fifo = workspace / ".agents" / "skills" / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "SKILL.md")
    found = discover(workspace, trusted=True)
    assert found.names() == []
    assert len(found.warnings) == 3


@pytest.mark.parametrize("name", ["../x", "a/b", "\u202eevil", "x" * 65, ".hidden", "a\nb"])
def test_names_that_are_not_plain_are_refused(workspace: Path, name: str) -> None:
    skill(workspace, "s", f"---\nname: {name!r}\ndescription: d\n---\n")
    assert discover(workspace, trusted=True).names() == []


def test_a_fifo_resource_is_refused_without_blocking(workspace: Path) -> None:
    folder = skill(workspace, "pipes", "---\nname: pipes\ndescription: has a fifo\n---\n")
    os.mkfifo(folder / "pipe.md")
    set_trust(workspace)
    with Rig(workspace, {"approvals": {"mode": "off"}}) as rig:
        result = rig.call_sync("read_skill_resource", {"name": "pipes", "path": "pipe.md"})
    assert result.is_error and result.error_type == "denied"


@pytest.mark.parametrize("entry", ["*", "group:files", "run_*", "Bash*", "read_files\n", "../run_command", ""])
def test_allowed_tools_never_pre_approve_by_wildcard_or_group(entry: str) -> None:
    patterns, _ = to_patterns([entry], lambda name: name in {"run_command", "read_files"})
    assert all(p.split(":", 1)[0] in {"run_command", "read_files"} for p in patterns)
    assert "*" not in [p.split(":", 1)[0] for p in patterns]
