"""Policy speaks every profile's names: deny lists, allowlists with the seed's meaning, warnings, the audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolrig.policy.audit import AuditLog
from toolrig.policy.names import seed_subjects
from toolrig.rig import Rig

SEED_ALLOW = ["Bash:git *", "Write:/src/*", "Edit:/src/**", "apply_patch:*"]


def rig_with(workspace: Path, profile: str | None = None, **config: Any) -> Rig:
    (workspace / "src" / "deep").mkdir(parents=True, exist_ok=True)
    (workspace / "src" / "deep" / "m.py").write_text("x = 1\n", encoding="utf-8")
    return Rig(workspace, config=config, profile=profile)


@pytest.mark.parametrize("profile", [None, "claude", "codebuff", "camelagi"])
def test_deny_bash_denies_run_command_whatever_profile_is_in_use(workspace: Path, profile: str | None) -> None:
    rig = rig_with(workspace, profile, tools={"deny": ["Bash"]})
    name = {"codebuff": "run_terminal_command", None: "run_command"}.get(profile, "Bash")
    result = rig.call_sync(name, {"command": "echo hi"})
    assert result.is_error and result.error_type == "denied"
    assert all(t.name not in ("Bash", "run_command", "run_terminal_command") for t in rig.tools())


def test_deny_with_a_native_name_and_a_glob_over_profile_names(workspace: Path) -> None:
    rig = rig_with(workspace, tools={"deny": ["read_file", "Web*"]})
    names = {t.name for t in rig.tools()}
    assert "read_files" not in names and "fetch_url" not in names and "web_search" not in names
    assert rig.warnings == []


def test_a_name_no_profile_knows_is_still_warned_with_the_closest_profile_name(workspace: Path) -> None:
    rig = rig_with(workspace, tools={"deny": ["Bsh"]})
    assert [w.message for w in rig.warnings] == ["'Bsh' matches no tool; did you mean Bash?"]


def decide(rig: Rig, name: str, args: dict[str, Any]) -> str:
    result = rig.call_sync(name, args)
    return "denied" if result.is_error and result.error_type == "denied" else "ran"


def test_the_seeds_allowlist_means_what_it_meant_there(workspace: Path) -> None:
    config = {"approvals": {"mode": "always", "allow": SEED_ALLOW, "fallback": "deny"}}
    rig = rig_with(workspace, "claude", **config)
    assert decide(rig, "Bash", {"command": "git status"}) == "ran"
    assert decide(rig, "Bash", {"command": "rm -rf src"}) == "denied"
    assert decide(rig, "Write", {"file_path": "src/new/deeper/a.py", "content": "y\n"}) == "ran"  # nested
    assert decide(rig, "Write", {"file_path": "elsewhere.py", "content": "y\n"}) == "denied"
    edit = {"file_path": "src/deep/m.py", "old_string": "x = 1", "new_string": "x = 2"}
    assert decide(rig, "Edit", edit) == "ran"
    patch = "*** Begin Patch\n*** Add File: docs/n.md\n+n\n*** End Patch\n"
    assert decide(rig, "apply_patch", {"patch": patch}) == "ran"
    # The same allowlist, the model on toolrig's names: the rules name the tools, not the spelling.
    plain = rig_with(workspace, None, **config)
    assert decide(plain, "run_command", {"command": "git log -1"}) == "ran"
    assert decide(plain, "write_file", {"path": "src/x/y.py", "content": "z\n"}) == "ran"


def test_an_absolute_seed_path_inside_the_workspace_reads_relative(workspace: Path) -> None:
    root = workspace.resolve()
    assert seed_subjects("Edit", f"{root}/src/*", root) == ["src/**"]
    assert seed_subjects("Write", "/tmp/*", root) == ["/tmp/**", "tmp/**"]
    assert seed_subjects("Bash", "git *", root) == ["git *"]
    assert seed_subjects("apply_patch", "*", root) == [None]
    assert seed_subjects("write_file", "src/*", root) == ["src/*"]  # toolrig's own name keeps toolrig's rules


def test_the_audit_records_the_tool_and_the_name_the_model_used(workspace: Path) -> None:
    rig = rig_with(workspace, "claude")
    rig.call_sync("Bash", {"command": "true"})
    rig.call_sync("calculate", {"expression": "1+1"})
    rows = AuditLog(rig.workspace.state_dir).query()
    assert [(r.tool, r.called_as) for r in rows] == [("run_command", "Bash"), ("calculate", None)]
    assert [r.tool for r in AuditLog(rig.workspace.state_dir).query(tool="Bash")] == ["run_command"]


def test_toolrig_audit_shows_the_name_the_model_used(workspace: Path) -> None:
    from click.testing import CliRunner

    from toolrig.cli import app

    rig_with(workspace, "claude").call_sync("Bash", {"command": "true"})
    out = CliRunner().invoke(app, ["audit", "--tool", "Bash", "--root", str(workspace)], catch_exceptions=False)
    assert "run_command (as Bash)" in out.stdout
