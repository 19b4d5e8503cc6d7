"""A directory swapped for a symlink to outside while code_search and glob run (review D7, check then use).

A second process exchanges ``memory`` and ``link -> outside`` with ``renameat2(RENAME_EXCHANGE)`` for a few
seconds while the tools run in a loop; not one result may show what lies outside, and none may be ``internal``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.file_helpers import Caller
from toolrig.sandbox import landlock

SWAPPER = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, seconds = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3])
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    libc.renameat2(-100, a, -100, b, 2)
"""

CALLS = [
    ("code_search", {"pattern": "OUTSIDE", "cwd": "memory"}),
    ("code_search", {"pattern": "OUTSIDE"}),
    ("code_search", {"pattern": "OUTSIDE", "output_mode": "files_with_matches"}),
    ("glob", {"pattern": "*.md", "cwd": "memory"}),
    ("glob", {"pattern": "**/*.md"}),
]


@pytest.fixture
def swapped_tree(tmp_path: Path, workspace: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    (workspace / "memory" / "deep").mkdir(parents=True)
    (outside / "deep").mkdir(parents=True)
    (workspace / "memory" / "x.md").write_text("inside\n")
    (workspace / "memory" / "deep" / "y.md").write_text("inside\n")
    (outside / "x.md").write_text("OUTSIDE-SECRET\n")
    (outside / "only_outside.md").write_text("OUTSIDE-SECRET\n")
    (outside / "deep" / "only_outside_deep.md").write_text("OUTSIDE-SECRET\n")
    (workspace / "link").symlink_to(outside)
    return workspace, outside


def test_landlock_is_available_here_so_the_race_is_closed() -> None:
    # The guarantee below depends on Landlock; this machine (and CI) has it. Elsewhere docs/policy.md applies.
    assert landlock.abi() >= 1


def test_code_search_and_glob_never_show_outside_content_while_a_directory_is_swapped(
    swapped_tree: tuple[Path, Path],
) -> None:
    workspace, _ = swapped_tree
    call = Caller(workspace)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(workspace / "memory"), str(workspace / "link"), "3"],
        stdout=subprocess.PIPE,
    )
    assert swapper.stdout is not None
    assert swapper.stdout.readline() == b"ready\n"
    rounds = 0
    try:
        while swapper.poll() is None:
            rounds += 1
            for name, args in CALLS:
                result = call(name, **args).model_dump(mode="json")
                text = json.dumps(result)
                assert "OUTSIDE-SECRET" not in text and "only_outside" not in text, (name, args, result)
                assert result.get("error_type") != "internal", (name, args, result)
    finally:
        swapper.kill()
        swapper.wait()
        swapper.stdout.close()
    assert rounds > 0
