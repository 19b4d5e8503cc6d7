"""The review's memory repros: r07 (a directory swapped for a symlink mid-call) and r08 (deny globs in search)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from toolrig.rig import Rig

SWAPPER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
sys.stdout.write("ready\\n"); sys.stdout.flush()
while True:
    libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE: the two names trade places atomically
"""


def test_r07_memory_get_and_write_never_reach_outside_while_memory_is_swapped_with_a_symlink(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("OUTSIDE-SECRET\n")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "x.md").write_text("inside\n")
    (workspace / "link").symlink_to(outside)
    rig = Rig(workspace, config={})
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(workspace / "memory"), str(workspace / "link")],
        stdout=subprocess.PIPE,
        text=True,
    )
    kinds: set[str] = set()
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        for n in range(300):  # a bounded number of calls, not a time: each races the swapper
            read = rig.call_sync("memory_get", {"file_path": "memory/x.md"})
            assert "OUTSIDE" not in json.dumps(read.model_dump(mode="json"))
            wrote = rig.call_sync(
                "memory_write", {"file_path": "memory/w.md", "content": f"RACE {n}", "mode": "overwrite"}
            )
            for result in (read, wrote):
                assert result.error_type != "internal", result
                kinds.add(result.error_type or "ok")
    finally:
        swapper.kill()
        swapper.wait()
        assert swapper.stdout is not None
        swapper.stdout.close()
    assert not (outside / "w.md").exists()
    assert sorted(outside.iterdir()) == [outside / "x.md"]
    assert "ok" in kinds  # the loop did run calls that landed inside


def test_r08_memory_search_never_returns_deny_globbed_files_and_drops_them_from_an_existing_index(
    workspace: Path,
) -> None:
    private = workspace / "memory" / "private"
    private.mkdir(parents=True)
    (private / "secret.md").write_text("# Note\nThe launch code is PINEAPPLE-42\n")
    (workspace / "memory" / "open.md").write_text("# Launch\nThe launch is on Friday\n")
    before = Rig(workspace, config={}).call_sync("memory_search", {"query": "launch code"})
    assert "PINEAPPLE" in json.dumps(before.model_dump(mode="json"))  # indexed while nothing denied it

    for glob in ("memory/private/", "**/secret.md", "memory/private/*.md"):
        rig = Rig(workspace, config={"workspace": {"deny_globs": [glob]}})
        denied = rig.call_sync("memory_get", {"file_path": "memory/private/secret.md"})
        assert denied.error_type == "denied", denied
        found = rig.call_sync("memory_search", {"query": "launch code PINEAPPLE"})
        assert not found.is_error, found
        assert "PINEAPPLE" not in json.dumps(found.model_dump(mode="json")), glob
        assert "open.md" in (found.output or {})["results"]


def test_a_path_deny_rule_hides_memory_files_from_memory_search_too(workspace: Path) -> None:
    # D9 for memory: a rule on path subjects keeps the file unread by the recursive search as well.
    private = workspace / "memory" / "private"
    private.mkdir(parents=True)
    (private / "secret.md").write_text("# Note\nThe launch code is PINEAPPLE-42\n")
    (workspace / "memory" / "open.md").write_text("# Launch\nThe launch is on Friday\n")
    assert "PINEAPPLE" in json.dumps(
        Rig(workspace, config={}).call_sync("memory_search", {"query": "launch code"}).model_dump(mode="json")
    )
    rule = {"tool": "*", "subject": "memory/private/**", "verdict": "deny"}
    rig = Rig(workspace, config={"tools": {"rules": [rule]}})
    assert rig.call_sync("memory_get", {"file_path": "memory/private/secret.md"}).error_type == "denied"
    found = rig.call_sync("memory_search", {"query": "launch code PINEAPPLE"})
    assert not found.is_error and "PINEAPPLE" not in json.dumps(found.model_dump(mode="json"))
    assert "open.md" in (found.output or {})["results"]
