from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.skill_helpers import install_samples, isolate_home
from toolrig.rig import Rig

STRICT = {"approvals": {"mode": "always", "fallback": "deny", "allow": ["load_skill"]}, "audit": {"enabled": True}}


@pytest.fixture
def skills_rig(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    with Rig(workspace, {"approvals": {"mode": "off"}}) as rig:
        yield rig


def call(rig: Rig, tool: str, /, session: str | None = None, agent: str | None = None, **args: Any) -> Any:
    options = {k: v for k, v in (("session_id", session), ("agent_id", agent)) if v is not None}
    return rig.call_sync(tool, args, **options)


def test_load_skill_returns_instructions_folder_and_resource_list_not_their_content(skills_rig: Rig) -> None:
    result = call(skills_rig, "load_skill", name="pdf-forms")
    assert not result.is_error, result.output
    out = result.output
    assert out["instructions"].startswith("# Filling PDF forms")
    assert "---" not in out["instructions"].splitlines()[0]
    assert out["resources"] == ["assets/template.txt", "references/fields.md", "scripts/fill.py"]
    assert Path(out["directory"]).name == "pdf-forms"
    assert "check boxes" not in str(out)  # a resource's content is read only on request


def test_skill_is_an_alias_of_load_skill(skills_rig: Rig) -> None:
    result = call(skills_rig, "skill", name="release-notes")
    assert not result.is_error
    assert result.output["name"] == "release-notes"


def test_a_skill_loaded_twice_in_a_run_is_not_loaded_again(skills_rig: Rig) -> None:
    first = skills_rig.call_sync("load_skill", {"name": "pdf-forms"}, session_id="s1")
    again = skills_rig.call_sync("load_skill", {"name": "pdf-forms"}, session_id="s1")
    other_run = skills_rig.call_sync("load_skill", {"name": "pdf-forms"}, session_id="s2")
    assert first.output["already_loaded"] is False
    assert again.output["already_loaded"] is True and again.output["instructions"] == ""
    assert other_run.output["already_loaded"] is False


def test_an_unknown_skill_names_the_ones_that_exist(skills_rig: Rig) -> None:
    result = call(skills_rig, "load_skill", name="nope")
    assert result.is_error and result.error_type == "not_found"
    assert "pdf-forms" in (result.next_action_hint or "")


def test_untrusted_workspace_skills_cannot_be_loaded(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace, trusted=False)
    with Rig(workspace, {"approvals": {"mode": "off"}}) as rig:
        result = call(rig, "load_skill", name="pdf-forms")
    assert result.is_error and result.error_type == "not_found"


def test_read_skill_resource_reads_a_file_in_a_nested_folder(skills_rig: Rig) -> None:
    result = call(skills_rig, "read_skill_resource", name="sql_helper", path="references/dialects/postgres.md")
    assert not result.is_error
    assert "RETURNING" in result.output["content"]


@pytest.mark.parametrize(
    "path", ["../pdf-forms/SKILL.md", "/etc/passwd", "~/.bashrc", "references/../../x", "..", "a\\..\\b", ""]
)
def test_read_skill_resource_refuses_paths_outside_the_skill(skills_rig: Rig, path: str) -> None:
    result = call(skills_rig, "read_skill_resource", name="sql_helper", path=path)
    assert result.is_error and result.error_type in ("denied", "invalid_input")


def test_read_skill_resource_refuses_a_symlink_out_of_the_skill(skills_rig: Rig, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    folder = skills_rig.workspace.root / ".agents/skills/pdf-forms"
    (folder / "references" / "leak.md").symlink_to(secret)
    (folder / "linked").symlink_to(tmp_path)
    for path in ("references/leak.md", "linked/secret.txt"):
        result = call(skills_rig, "read_skill_resource", name="pdf-forms", path=path)
        assert result.is_error and result.error_type == "denied", path
        assert "top secret" not in str(result.output)
    listed = call(skills_rig, "load_skill", name="pdf-forms").output["resources"]
    assert "references/leak.md" not in listed and not any(p.startswith("linked") for p in listed)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    path=st.lists(
        st.sampled_from(["a", "b", ".", "/", "~", "\\", "\x00", " ", "..", "references", "fields.md", "SKILL.md"]),
        max_size=10,
    ).map("".join)
)
def test_any_resource_path_reads_inside_the_folder_or_is_refused_cleanly(skills_rig: Rig, path: str) -> None:
    result = call(skills_rig, "read_skill_resource", name="pdf-forms", path=path)
    if result.is_error:
        assert result.error_type in ("denied", "invalid_input", "not_found"), result.output
    else:
        folder = (skills_rig.workspace.root / ".agents/skills/pdf-forms").resolve()
        target = Path(os.path.normpath(folder / result.output["path"]))
        assert target.is_relative_to(folder)


def test_allowed_tools_pre_approve_calls_and_the_audit_says_so(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    (workspace / "notes.txt").write_text("hello\n")
    with Rig(workspace, STRICT) as rig:
        before = call(rig, "read_files", paths=["notes.txt"])
        assert before.is_error and before.error_type == "denied"  # mode always, nobody to ask: fallback deny
        loaded = call(rig, "load_skill", session="run-1", name="pdf-forms")
        folder = ".agents/skills/pdf-forms"
        granted = loaded.output["pre_approved"]
        assert granted[0] == "run_command:python3 scripts/*" and granted[-1] == "read_files"
        assert f"run_command:python3 {folder}/scripts/*" in granted  # the script where it lives, too
        assert all(g.startswith("run_command:python3 ") and g.endswith("scripts/*") for g in granted[:-1])
        after = call(rig, "read_files", session="run-1", paths=["notes.txt"])
        assert not after.is_error
        assert rig.governance.audit is not None
        row = rig.governance.audit.query(tool="read_files")[-1]
    assert row.decision == "allow"
    assert row.rule.startswith("skills.pdf-forms.allowed-tools")


@pytest.mark.parametrize(
    "command",
    [
        "python3 scripts/fill.py form.pdf",  # run from the skill's folder
        "python3 .agents/skills/pdf-forms/scripts/fill.py form.pdf",  # from the workspace
        "python3 {folder}/scripts/fill.py form.pdf",  # as load_skill shows the folder
    ],
)
def test_a_skills_allowed_script_is_pre_approved_where_it_lives(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """docs/skills.md's own example, `run_command(python3 scripts/*)`, never matched the script in the folder."""
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    with Rig(workspace, STRICT) as rig:
        loaded = call(rig, "load_skill", session="run-1", name="pdf-forms")
        decide = rig.governance.policy.decide
        tool = rig.registry.get("run_command")
        spelled = command.format(folder=loaded.output["directory"])
        assert decide(tool, None, [spelled], session="run-1").verdict == "allow"
        # the folder is literal: a sibling folder or another script's folder is not covered
        assert decide(tool, None, ["python3 .agents/skills/other/scripts/x.py"], session="run-1").verdict != "allow"
        assert decide(tool, None, ["python3 /tmp/scripts/x.py"], session="run-1").verdict != "allow"


def test_deny_and_ask_rules_still_win_over_a_skill_pre_approval(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    (workspace / "notes.txt").write_text("hello\n")
    config = {
        **STRICT,
        "tools": {
            "rules": [
                {"tool": "read_files", "subject": "notes.txt", "verdict": "deny", "reason": "private"},
                {"tool": "run_command", "subject": "git log *", "verdict": "ask"},
            ]
        },
    }
    with Rig(workspace, config) as rig:
        call(rig, "load_skill", session="run-1", name="pdf-forms")
        loaded = call(rig, "load_skill", session="run-1", name="release-notes")
        assert "run_command:git log *" in loaded.output["pre_approved"]
        refused = call(rig, "read_files", session="run-1", paths=["notes.txt"])
        assert refused.is_error and "private" in (refused.message or "")
        tool = rig.registry.get("run_command")
        decide = rig.governance.policy.decide
        assert decide(tool, None, ["git log --oneline"], session="run-1").verdict == "ask"
        assert decide(tool, None, ["git describe --tags"], session="run-1").verdict == "allow"
        assert decide(tool, None, ["rm -rf /"], session="run-1").verdict == "ask"


def test_a_skills_pre_approvals_hold_for_the_run_that_loaded_it_only(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """They were added for the agent (or, with none configured, for everyone) for the rig's whole life: a skill one
    run loaded pre-approved its commands for every later session and every agent."""
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    (workspace / "notes.txt").write_text("hello\n")
    config = {**STRICT, "agents": {"alice": {"tools": ["read_files", "load_skill"]}}}
    with Rig(workspace, config) as rig:
        for session, agent in (("run-1", None), ("run-2", "alice")):
            loaded = call(rig, "load_skill", session=session, agent=agent, name="pdf-forms")
            assert "read_files" in loaded.output["pre_approved"]
            assert not call(rig, "read_files", session=session, agent=agent, paths=["notes.txt"]).is_error
        for session, agent in (("run-3", None), ("run-3", "alice"), ("run-1", "alice"), ("run-2", None), (None, None)):
            refused = call(rig, "read_files", session=session, agent=agent, paths=["notes.txt"])
            assert refused.error_type == "denied", (session, agent, refused)  # asked, and nobody here to answer
        unsessioned = call(rig, "load_skill", agent="alice", name="pdf-forms")
        assert unsessioned.output["pre_approved"] == [] and "not part of a session" in str(unsessioned.output["notes"])


def test_the_schema_lists_the_skills_found_as_an_enum(skills_rig: Rig, workspace: Path) -> None:
    schemas = {s["name"]: s for s in skills_rig.schemas("anthropic")}
    enum = schemas["load_skill"]["input_schema"]["properties"]["name"]["enum"]
    assert sorted(enum) == ["original-name", "pdf-forms", "release-notes", "sql_helper"]
    assert "enum" in schemas["read_skill_resource"]["input_schema"]["properties"]["name"]
    with Rig(workspace.parent, {}) as elsewhere:  # another workspace, no skills: a plain string
        plain = {s["name"]: s for s in elsewhere.schemas("anthropic")}
    assert "enum" not in plain["load_skill"]["input_schema"]["properties"]["name"]


def test_read_skill_resource_attaches_an_image_judged_by_its_bytes_not_its_name(skills_rig: Rig) -> None:
    from tests.support.media_tools import tiny_png
    from toolrig.content import ImagePart

    folder = skills_rig.workspace.root / ".agents/skills/pdf-forms"
    (folder / "assets" / "form.dat").write_bytes(tiny_png(4, 3))
    result = call(skills_rig, "read_skill_resource", name="pdf-forms", path="assets/form.dat")
    assert not result.is_error, result.output
    assert result.output["media_type"] == "image/png" and "4x3" in result.output["content"]
    (image,) = result.content
    assert isinstance(image, ImagePart) and image.media_type == "image/png" and image.size == len(tiny_png(4, 3))
    text = call(skills_rig, "read_skill_resource", name="pdf-forms", path="references/fields.md")
    assert text.output["media_type"] == "text/markdown" and text.content == []


def test_read_skill_resource_refuses_an_oversized_or_damaged_image_and_other_binaries(skills_rig: Rig) -> None:
    from tests.support.media_tools import tiny_png
    from toolrig.tools.skills import MAX_IMAGE_BYTES

    folder = skills_rig.workspace.root / ".agents/skills/pdf-forms/assets"
    (folder / "huge.png").write_bytes(tiny_png() + b"\0" * MAX_IMAGE_BYTES)
    (folder / "cut.png").write_bytes(tiny_png()[:12])
    (folder / "blob.bin").write_bytes(b"\0\1\2")
    expected = {"huge.png": "too_large", "cut.png": "invalid_input", "blob.bin": "invalid_input"}
    for name, error_type in expected.items():
        result = call(skills_rig, "read_skill_resource", name="pdf-forms", path=f"assets/{name}")
        assert result.is_error and result.error_type == error_type, name
        assert result.content == []


def test_a_skill_folder_with_glob_characters_is_matched_literally() -> None:
    from fnmatch import fnmatchcase

    from toolrig.skills.allowed import to_patterns

    patterns, _ = to_patterns(["run_command(python3 scripts/*)"], lambda _: True, ["/s/we[ir]d*dir"])
    moved = patterns[1].split(":", 1)[1]
    assert fnmatchcase("python3 /s/we[ir]d*dir/scripts/x.py", moved)
    assert not fnmatchcase("python3 /s/wei-anything-dir/scripts/x.py", moved)


def test_load_skill_shows_a_workspace_skills_folder_from_the_workspace(skills_rig: Rig) -> None:
    out = call(skills_rig, "load_skill", name="pdf-forms").output
    assert out["directory"] == ".agents/skills/pdf-forms"
    assert str(skills_rig.workspace.root) not in str(out)


def test_load_skill_shows_a_user_skills_folder_under_tilde_never_the_home(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate_home(tmp_path, monkeypatch)
    install_samples(home, ".agents/skills", trusted=False)
    with Rig(workspace, {"approvals": {"mode": "off"}}) as rig:
        out = call(rig, "load_skill", name="pdf-forms").output
    assert out["directory"] == "~/.agents/skills/pdf-forms"
    assert str(home) not in str(out)


def test_the_shown_folder_is_relative_whichever_spelling_the_paths_have(tmp_path: Path) -> None:
    from toolrig.tools.skills import shown_folder

    root = tmp_path / "ws"
    (root / "skills" / "a").mkdir(parents=True)
    (tmp_path / "link").symlink_to(root)
    assert shown_folder(root / "skills" / "a", tmp_path / "link") == "skills/a"  # the root by a symlink
    assert shown_folder(root, root) == "."
