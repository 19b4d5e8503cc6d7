"""toolrig itself run as an unprivileged user (uid 65534), end to end: ``toolrig call run_command`` under setpriv.

The hostile review (sbxreview, "noticed") saw every run_command fail as ``nobody`` with "Could not start the
command: Permission denied" and "retry later", ``sandbox: off`` too, and only ``Bubblewrap.wrap`` was tested as
nobody. Here the whole path runs as that user: the CLI, the Rig, the launcher (toolrig's interpreter started
again), the keeper, bubblewrap in a user namespace, with a HOME and TOOLRIG_HOME the user owns. A command that
cannot start because of a file the user may not run says which file and that a retry will not help.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolrig
from toolrig.sandbox.process import _unstartable

NOBODY = 65534
SECRET = "unprivileged-secret-7c2d"
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def _python_for_nobody(env: dict[str, str]) -> list[str]:
    """An interpreter (and env) the unprivileged user can run toolrig with: this one, else the system's same one.

    This test environment's interpreter may live where only root can go (pyenv under a 0700 /root); the
    system Python of the same version runs the same installed packages through PYTHONPATH.
    """
    src = str(Path(toolrig.__file__).resolve().parents[1])
    libs = dict.fromkeys([src, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env["PYTHONPATH"] = ":".join(libs)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version, path="/usr/bin:/bin") or ""):
        probe = [*AS_NOBODY, "env", "-i", *(f"{k}={v}" for k, v in env.items()), python, "-c", "import toolrig"]
        if python and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return [python]
    raise AssertionError(f"no interpreter of {version} that uid {NOBODY} can run toolrig with")


@pytest.fixture
def nobody_dirs() -> Iterator[tuple[Path, Path]]:
    """A workspace and a HOME owned by the unprivileged user, outside /tmp (a command's /tmp is its own)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="toolrig-nobody-") as made:
        base = Path(made)
        home, workspace = base / "home", base / "ws"
        for directory in (home, home / ".ssh", home / ".toolrig", workspace):
            directory.mkdir()
        (home / ".ssh" / "id_ed25519").write_text(SECRET)
        (workspace / "a.txt").write_text("in the workspace\n")
        os.chmod(base, 0o755)  # noqa: S103 - nobody must reach its HOME and workspace
        for path in (home, workspace, *home.rglob("*"), *workspace.rglob("*")):
            os.chown(path, NOBODY, NOBODY)
        yield home, workspace


def _call(home: Path, workspace: Path, sandbox: str, command: str) -> dict[str, Any]:
    (home / ".toolrig" / "config.yaml").write_text(json.dumps({"tool_config": {"run_command": {"sandbox": sandbox}}}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TOOLRIG_HOME": str(home / ".toolrig"), "LC_ALL": "C.UTF-8"}
    python = _python_for_nobody(env)
    argv = [*AS_NOBODY, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *python, "-m", "toolrig"]
    argv += ["call", "run_command", "--json", json.dumps({"command": command})]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=workspace, timeout=120)
    assert done.stdout.strip().startswith("{"), done
    result: dict[str, Any] = json.loads(done.stdout)
    assert not result["is_error"], (result, done.stderr)
    output: dict[str, Any] = result["output"]
    return output


COMMAND = "id -u; cat a.txt; echo made > made.txt; cat ~/.ssh/id_ed25519 2>/dev/null || echo hidden"


def test_run_command_works_as_an_unprivileged_user_with_the_sandbox_on(nobody_dirs: tuple[Path, Path]) -> None:
    home, workspace = nobody_dirs
    out = _call(home, workspace, "required", COMMAND)
    assert out["exit_code"] == 0, out
    assert out["stdout"].split("\n")[:2] == [str(NOBODY), "in the workspace"], out
    assert SECRET not in out["stdout"] and "hidden" in out["stdout"], out
    assert "bwrap" in out["containment"], out
    assert (workspace / "made.txt").stat().st_uid == NOBODY


def test_run_command_works_as_an_unprivileged_user_with_the_sandbox_off(nobody_dirs: tuple[Path, Path]) -> None:
    home, workspace = nobody_dirs
    out = _call(home, workspace, "off", COMMAND)
    assert out["exit_code"] == 0, out
    assert out["stdout"].split("\n")[:2] == [str(NOBODY), "in the workspace"], out
    assert SECRET in out["stdout"], out  # off is off: the user's own files are the user's
    assert "sandbox: off" in out["containment"], out
    assert (workspace / "made.txt").stat().st_uid == NOBODY


def test_a_launcher_this_user_cannot_run_is_named_and_not_worth_a_retry() -> None:
    denied = _unstartable(PermissionError(13, "Permission denied", "/root/.pyenv/versions/3/bin/python"))
    assert denied.retryable is False
    assert "/root/.pyenv/versions/3/bin/python" in denied.message
    assert "Retrying will not help" in denied.next_action_hint
    assert _unstartable(OSError(32, "Broken pipe")).error_type == "unavailable"
