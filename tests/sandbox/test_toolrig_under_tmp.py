"""toolrig itself installed under ``/tmp`` (a clone or a venv there): its commands still run in the sandbox.

The view's ``/tmp`` is the session's own, so the interpreter the egress bridge runs on was missing inside it
(``execvp .../.venv/bin/python: No such file or directory``), and every guarded command was refused: seen with
CI's clone under ``/tmp``. Run end to end from a venv made under ``/tmp``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import toolrig

pytestmark = pytest.mark.slow  # makes a venv and runs toolrig in a subprocess


def test_a_guarded_command_runs_when_toolrigs_interpreter_lives_under_tmp(tmp_path: Path) -> None:
    venv = Path(tempfile.mkdtemp(dir="/tmp", prefix="toolrig-venv-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        src = str(Path(toolrig.__file__).resolve().parents[1])
        paths = os.pathsep.join([src, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        workspace, home = tmp_path / "ws", tmp_path / "home"
        workspace.mkdir()
        home.mkdir()
        env = {**os.environ, "PYTHONPATH": paths, "TOOLRIG_HOME": str(home)}
        args = json.dumps({"command": "echo confined; cat /proc/1/cmdline | tr '\\0' ' '"})
        done = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "toolrig",
                "call",
                "run_command",
                "--json",
                args,
                "--root",
                str(workspace),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        result = json.loads(done.stdout)
        assert not result.get("is_error"), result
        assert result["output"]["stdout"].startswith("confined\n"), result
        assert "bwrap" in result["output"]["containment"] and "egress" in result["output"]["containment"], result
    finally:
        shutil.rmtree(venv, ignore_errors=True)
