"""code_search against flags, globs and patterns that try to run programs or read outside the workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support.file_helpers import Caller, write

SECRET = "SECRET-OUTSIDE"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    write(outside, {"secret.txt": f"{SECRET}\n"})
    root = tmp_path / "ws"
    write(root, {"a.txt": "needle\n", "rules.ignore": "*.md\n", "doc.md": "needle in docs\n"})
    canary = root / "pre.sh"
    canary.write_text(f'#!/bin/sh\ntouch {root / "RAN"}\ncat "$1"\n')
    canary.chmod(canary.stat().st_mode | stat.S_IXUSR)
    return root


@pytest.mark.parametrize(
    "flags",
    [
        ["--pre", "./pre.sh"],
        ["--pre=./pre.sh"],
        ["--pre", "./pre.sh", "--pre-glob", "*"],
        ["--hostname-bin", "./pre.sh"],
        ["--hostname-bin=./pre.sh"],
        ["-z"],
        ["--search-zip"],
        ["-iz"],
        ["-i", "--pre=/bin/sh"],
    ],
)
def test_flags_that_run_programs_are_denied_and_nothing_runs(ws: Path, flags: list[str]) -> None:
    message = Caller(ws).error("code_search", "denied", pattern="needle", flags=flags)
    assert "not allowed" in message
    assert not (ws / "RAN").exists()


def test_an_ignore_file_outside_is_denied_and_one_inside_is_used(ws: Path, tmp_path: Path) -> None:
    caller = Caller(ws)
    assert "outside the workspace" in caller.error(
        "code_search", "denied", pattern="needle", flags=["--ignore-file", str(tmp_path / "outside/secret.txt")]
    )
    out = caller.ok("code_search", pattern="needle", flags=["--ignore-file=rules.ignore"])
    assert out["output"] == "a.txt:1: needle"


def test_follow_into_a_link_that_leaves_the_workspace_is_denied(ws: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside", ws / "escape")
    message = Caller(ws).error("code_search", "denied", pattern=SECRET, flags=["-L"])
    assert "escape" in message and SECRET not in message
    # Without --follow the link is not followed: nothing outside is searched.
    assert Caller(ws).ok("code_search", pattern=SECRET)["output"] == ""


def test_globs_and_patterns_cannot_reach_outside(ws: Path, tmp_path: Path) -> None:
    caller = Caller(ws)
    for glob in (["../outside/*"], ["/**"], [str(tmp_path / "outside") + "/*"], ["**/../../outside/*"]):
        out = caller.ok("code_search", pattern=SECRET, glob=glob)
        assert out["output"] == "" and SECRET not in out["message"]
    for pattern in ["--pre=./pre.sh", "-z", "--files", "--", "-e"]:
        assert caller("code_search", pattern=pattern).error_type in (None, "invalid_input")
    assert not (ws / "RAN").exists()


def test_toolrig_state_and_git_internals_are_never_searched(ws: Path) -> None:
    write(ws, {".toolrig/outputs/out.txt": "needle\n", ".git/config": "needle\n"})
    out = Caller(ws).ok("code_search", pattern="needle", flags=["--hidden", "--no-ignore"])
    assert ".toolrig" not in out["output"] and ".git/" not in out["output"]
    listing = Caller(ws).ok("glob", pattern=".toolrig/**")
    assert listing["files"] == []


def test_deny_globs_hide_files_from_search_and_glob(ws: Path) -> None:
    caller = Caller(ws, {"workspace": {"deny_globs": ["*.md"]}})
    assert caller.ok("code_search", pattern="needle")["output"] == "a.txt:1: needle"
    assert "doc.md" not in caller.ok("glob", pattern="*")["files"]
    assert caller.error("read_files", "denied", paths=["doc.md"])


def test_a_pattern_is_never_taken_for_a_path(ws: Path, tmp_path: Path) -> None:
    secret = str(tmp_path / "outside/secret.txt")
    caller = Caller(ws)
    assert caller.ok("code_search", pattern=secret)["output"] == ""
    assert caller.error("code_search", "invalid_input", pattern=secret, flags=["-e", "needle"])
    assert caller.error("code_search", "invalid_input", pattern=secret, flags=["--regexp=needle"])
