"""Where bubblewrap cannot confine (not installed, no user namespaces), Landlock does what it can, then nothing;
every result's containment says which held, ``sandbox: required`` refuses instead, ``sandbox: off`` opts out.

Absence is simulated the way a machine has it: a PATH without ``bwrap``, and Landlock reported missing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolrig.rig import Rig
from toolrig.sandbox.confine import SandboxUnavailable, landlocked
from toolrig.sandbox.confine.choose import choose

SECRET = "TOP-SECRET-7f3a"
TOOLS = ("bash", "sh", "cat", "echo", "touch", "ls", "id", "env", "mkdir")


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding the usual tools but not bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in TOOLS:
        found = shutil.which(name)
        assert found is not None
        (bin_dir / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as made:
        path = Path(made).resolve()
        (path / ".ssh").mkdir()
        (path / ".ssh" / "id").write_text(SECRET)
        monkeypatch.setenv("HOME", str(path))
        yield path


def rig_for(workspace: Path, **run_command: Any) -> Rig:
    return Rig(workspace, config={"workspace": {"deny_globs": [".env"]}, "tool_config": {"run_command": run_command}})


def test_without_bwrap_landlock_holds_what_it_can_and_says_so(
    workspace: Path, home: Path, no_bwrap: Path, toolrig_home: Path
) -> None:
    (workspace / ".env").write_text(SECRET)
    (workspace / "sub").mkdir()
    (toolrig_home / "token").write_text(SECRET)
    rig = rig_for(workspace)
    result = rig.call_sync(
        "run_command",
        {"command": f"cat .env; cat {home}/.ssh/id; cat {toolrig_home}/token; echo x > {home}/out; echo ok > sub/f"},
    )
    assert not result.is_error, result
    out = result.output
    assert SECRET not in out["stdout"] + out["stderr"], out
    assert "; landlock:" in out["containment"] and "bwrap is not installed" not in out["containment"]
    assert not (home / "out").exists() and (workspace / "sub" / "f").read_text() == "ok\n"
    assert ".env" in (out["note"] or "")


def test_with_nothing_available_commands_still_run_and_containment_says_so(
    workspace: Path, no_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(landlocked, "unavailable", lambda: "Landlock is not available (simulated)")
    result = rig_for(workspace).call_sync("run_command", {"command": "echo hi"})
    assert not result.is_error and result.output["stdout"] == "hi\n", result
    containment = result.output["containment"]
    assert "; no filesystem or network confinement" in containment, containment
    assert "bwrap is not installed" in containment and "simulated" in containment


def test_sandbox_required_refuses_when_nothing_holds(
    workspace: Path, no_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(landlocked, "unavailable", lambda: "Landlock is not available (simulated)")
    (workspace / "marker").write_text("")
    result = rig_for(workspace, sandbox="required").call_sync("run_command", {"command": "rm marker"})
    assert result.is_error and result.error_type == "unavailable", result
    assert "required" in result.message and "bwrap is not installed" in result.message
    assert "toolrig sandbox check" in (result.next_action_hint or "")
    assert (workspace / "marker").exists()
    with pytest.raises(SandboxUnavailable):
        choose("required")


def test_sandbox_off_runs_unconfined_and_says_so(workspace: Path, home: Path) -> None:
    result = rig_for(workspace, sandbox="off").call_sync("run_command", {"command": f"cat {home}/.ssh/id"})
    assert result.output["stdout"] == SECRET
    assert "sandbox: off" in result.output["containment"]


def test_an_untrusted_workspace_cannot_turn_the_sandbox_off(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig" / "config.yaml").write_text("tool_config:\n  run_command:\n    sandbox: 'off'\n")
    result = Rig(workspace).call_sync("run_command", {"command": "true"})
    assert "; bwrap (" in result.output["containment"], result.output


def test_a_forced_backend_is_the_only_one_tried() -> None:
    assert choose("auto", force="landlock").backend.name == "landlock"
    assert choose("auto", force="bwrap", search_path="/nonexistent").backend.name == "none"
    assert choose("off").backend.name == "none"


def test_sandbox_check_says_what_holds_and_why_not(workspace: Path, no_bwrap: Path) -> None:
    from toolrig.cli import app

    result = CliRunner().invoke(app, ["sandbox", "check", "--root", str(workspace), "--json"])
    assert result.exit_code == 0, result.output
    assert '"chosen": "landlock"' in result.output and "bwrap is not installed" in result.output
