"""A model's words that reach a program's arguments (a command, a search pattern, globs) past what the kernel takes.

Linux refuses to start a program with one argument over 128 KiB, or all of them and the environment over ARG_MAX:
the spawn failed with E2BIG, which became ``internal`` with a traceback (code_search, glob) or ``unavailable``,
"retry later" (run_command). It is the input's to shorten: ``invalid_input``, checked before any spawn.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from toolrig import Rig
from toolrig.sandbox.arglimits import MAX_ARG, too_long


@pytest.mark.parametrize("extra", [-1, 0, 1, 70_000])
def test_a_command_at_the_kernels_limit_runs_and_one_byte_over_is_invalid_input(workspace: Path, extra: int) -> None:
    """The boundary is the kernel's own: a command of MAX_ARG - 1 bytes (its NUL makes MAX_ARG) starts."""
    command = "echo " + "x" * (MAX_ARG - 1 - len("echo ") + extra)
    result = Rig(workspace, config={}).call_sync("run_command", {"command": command})
    if extra <= 0:
        assert not result.is_error and result.output["exit_code"] == 0, result
        assert result.output["stdout"].startswith("x")
    else:
        assert result.error_type == "invalid_input", result
        assert f"{len(command):,} bytes" in (result.message or "") and result.next_action_hint


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("code_search", {"pattern": "x" * 200_000}),
        ("code_search", {"pattern": "x", "glob": ["y" * 200_000]}),
        ("code_search", {"pattern": "x", "glob": [f"{n}" + "y" * 120_000 for n in range(20)]}),  # past ARG_MAX
        ("glob", {"pattern": "x" * 200_000}),
        ("run_command", {"command": "x" * 200_000}),
    ],
)
def test_arguments_past_what_the_kernel_takes_are_invalid_input_never_internal(
    workspace: Path, tool: str, args: dict[str, Any]
) -> None:
    (workspace / "a.txt").write_text("x\n")
    result = Rig(workspace, config={}).call_sync(tool, args)
    assert result.error_type == "invalid_input", result
    assert "Linux takes at most" in (result.message or "") and result.next_action_hint


def test_the_whole_size_counts_every_argument_and_the_environment() -> None:
    limit = os.sysconf("SC_ARG_MAX")
    assert too_long(["a" * 1000] * 10, {"A": "b"}) is None
    many = ["a" * (MAX_ARG - 2)] * (limit // MAX_ARG + 1)
    assert "arguments and environment" in (too_long(many) or "")
    assert "environment variable BIG" in (too_long(["true"], {"BIG": "x" * MAX_ARG}) or "")
