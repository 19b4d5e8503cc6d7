from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.file_helpers import Caller, write


def names(workspace: Path) -> list[str]:
    """What is in the workspace, leaving out toolrig's own state (the audit log lives there)."""
    return sorted(p.name for p in workspace.iterdir() if p.name != ".toolrig")


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def test_update_with_context_header_and_move(call: Caller, workspace: Path) -> None:
    write(workspace, {"src/a.py": "def f():\n    return 1\n\ndef g():\n    return 1\n"})
    out = call.ok(
        "apply_patch",
        patch=patch(
            "*** Update File: src/a.py", "*** Move to: lib/b.py", "@@ def g():", "-    return 1", "+    return 2"
        ),
    )
    assert out["summary"] == "Success. Updated the following files:\nM lib/b.py\n"
    assert not (workspace / "src/a.py").exists()
    assert (workspace / "lib/b.py").read_text() == "def f():\n    return 1\n\ndef g():\n    return 2\n"


def test_crlf_files_stay_crlf(call: Caller, workspace: Path) -> None:
    write(workspace, {"w.txt": "a\r\nb\r\nc\r\n"})
    call.ok("apply_patch", patch=patch("*** Update File: w.txt", "@@", " a", "-b", "+B"))
    assert (workspace / "w.txt").read_bytes() == b"a\r\nB\r\nc\r\n"


def test_lenient_matching_finds_typographic_and_whitespace_variants(call: Caller, workspace: Path) -> None:
    write(workspace, {"t.md": "intro\n  \u201cquoted\u201d \u2014 text  \nend\n"})
    call.ok("apply_patch", patch=patch("*** Update File: t.md", "@@", ' "quoted" - text', "+added"))
    assert (workspace / "t.md").read_text() == 'intro\n"quoted" - text\nadded\nend\n'


def test_a_failure_in_a_later_hunk_writes_nothing(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "a\n", "b.txt": "b\n"})
    message = call.error(
        "apply_patch",
        "conflict",
        patch=patch(
            "*** Add File: new/c.txt",
            "+c",
            "*** Update File: a.txt",
            "-a",
            "+A",
            "*** Update File: b.txt",
            "-zzz",
            "+B",
        ),
    )
    assert message.startswith("Failed to find expected lines in b.txt:\nzzz")
    assert names(workspace) == ["a.txt", "b.txt"]
    assert (workspace / "a.txt").read_text() == "a\n"


def test_a_write_failing_midway_rolls_every_file_back(
    call: Caller, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, {"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "keep me\n"})
    (workspace / "gone.txt").chmod(0o640)
    calls = {"n": 0}
    original_write = type(call.rig.workspace).write_bytes

    def failing_write(self: object, path: Path, data: bytes, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3 and kwargs.get("cancellable", True):
            raise OSError(28, "No space left on device", str(path))
        original_write(self, path, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(call.rig.workspace), "write_bytes", failing_write)
    message = call.error(
        "apply_patch",
        "conflict",
        patch=patch(
            "*** Update File: a.txt",
            "-a",
            "+A",
            "*** Delete File: gone.txt",
            "*** Add File: x/y/new.txt",
            "+n",
            "*** Update File: b.txt",
            "-b",
            "+B",
        ),
    )
    assert "No space left on device" in message and "restored" in message
    assert names(workspace) == ["a.txt", "b.txt", "gone.txt"]
    assert (workspace / "a.txt").read_text() == "a\n" and (workspace / "gone.txt").read_text() == "keep me\n"
    assert (workspace / "gone.txt").stat().st_mode & 0o777 == 0o640


def test_hunks_on_the_same_file_apply_in_sequence(call: Caller, workspace: Path) -> None:
    out = call.ok(
        "apply_patch",
        patch=patch("*** Add File: n.txt", "+one", "*** Update File: n.txt", "@@", "-one", "+two"),
    )
    assert (workspace / "n.txt").read_text() == "two\n"
    assert out["summary"] == "Success. Updated the following files:\nA n.txt\nM n.txt\n"


def test_end_of_file_anchor_picks_the_last_occurrence(call: Caller, workspace: Path) -> None:
    write(workspace, {"f.txt": "x\ny\nx\n"})
    call.ok("apply_patch", patch=patch("*** Update File: f.txt", "@@", "-x", "+z", "*** End of File"))
    assert (workspace / "f.txt").read_text() == "x\ny\nz\n"


def test_parse_errors_are_invalid_input_with_the_line(call: Caller) -> None:
    message = call.error("apply_patch", "invalid_input", patch=patch("*** Update File: a", "@@", "garbage"))
    assert message.startswith("Invalid patch hunk on line 4: Unexpected line found in update hunk: 'garbage'")


def test_binary_targets_and_directories_are_refused(call: Caller, workspace: Path) -> None:
    write(workspace, {"b.bin": b"\x00\x01", "d/x": ""})
    call.error("apply_patch", "invalid_input", patch=patch("*** Update File: b.bin", "-a", "+b"))
    call.error("apply_patch", "conflict", patch=patch("*** Add File: d", "+x"))
    os.symlink("d", workspace / "dlink")
    call.error("apply_patch", "not_found", patch=patch("*** Delete File: dlink"))


def test_policy_rules_see_every_path_of_a_patch_including_move_to(workspace: Path) -> None:
    write(workspace, {"src/a.py": "x\n"})
    caller = Caller(
        workspace, {"tools": {"rules": [{"tool": "apply_patch", "subject": "secrets/**", "verdict": "deny"}]}}
    )
    moved = patch("*** Update File: src/a.py", "*** Move to: secrets/a.py", "@@", "-x", "+y")
    assert caller("apply_patch", patch=moved).error_type == "denied"
    assert (workspace / "src/a.py").read_text() == "x\n" and not (workspace / "secrets").exists()
    caller.ok("apply_patch", patch=patch("*** Update File: src/a.py", "@@", "-x", "+y"))
