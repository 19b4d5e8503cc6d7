from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.file_helpers import Caller, write
from toolrig.sandbox import journal


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
    # The file keeps its own context line; the added line takes the file's indentation there.
    assert (workspace / "t.md").read_text() == "intro\n  \u201cquoted\u201d \u2014 text  \n  added\nend\n"


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


ROLLBACK_PATCH = patch(
    "*** Update File: a.txt",
    "-a",
    "+A",
    "*** Delete File: gone.txt",
    "*** Add File: x/y/new.txt",
    "+n",
    "*** Update File: b.txt",
    "-b",
    "+B",
)


def _assert_untouched(workspace: Path) -> None:
    assert names(workspace) == ["a.txt", "b.txt", "gone.txt"]
    assert (workspace / "a.txt").read_text() == "a\n" and (workspace / "gone.txt").read_text() == "keep me\n"
    assert (workspace / "gone.txt").stat().st_mode & 0o777 == 0o640
    assert not [p for p in workspace.rglob("*") if p.name.endswith(".toolrig-tmp")]


def test_a_write_failing_midway_changes_nothing(call: Caller, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workspace, {"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "keep me\n"})
    (workspace / "gone.txt").chmod(0o640)
    calls = {"n": 0}
    original_stage = journal.stage

    def failing_stage(dir_fd: int, name: str, path: Path, tmp: str, data: bytes, mode: int | None = None) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device", str(path))
        original_stage(dir_fd, name, path, tmp, data, mode)

    monkeypatch.setattr(journal, "stage", failing_stage)
    message = call.error("apply_patch", "conflict", patch=ROLLBACK_PATCH)
    assert "No space left on device" in message and "restored" in message
    _assert_untouched(workspace)


def test_a_rename_failing_after_the_commit_point_puts_every_file_back(
    call: Caller, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, {"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "keep me\n"})
    (workspace / "gone.txt").chmod(0o640)
    calls = {"n": 0}
    original_rename = os.rename

    def failing_rename(src: str, dst: str, **kwargs: int) -> None:
        if str(src).endswith(".toolrig-tmp"):
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(16, "Device or resource busy", str(dst))
        original_rename(src, dst, **kwargs)

    monkeypatch.setattr(journal.os, "rename", failing_rename)
    message = call.error("apply_patch", "conflict", patch=ROLLBACK_PATCH)
    assert "busy" in message and "restored" in message
    _assert_untouched(workspace)
    assert not list((workspace / ".toolrig" / "journal").iterdir())


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


# ---------------------------------------------------------------- issue 21 and issue 18, at the tool


def test_an_ambiguous_chunk_is_a_conflict_naming_both_lines_and_nothing_changes(call: Caller, workspace: Path) -> None:
    text = "class A:\n    def close(self):\n        pass\n\nclass B:\n    def close(self):\n        pass\n"
    write(workspace, {"m.py": text})
    result = call(
        "apply_patch",
        patch=patch("*** Update File: m.py", "@@", "     def close(self):", "-        pass", "+        return"),
    )
    assert result.is_error and result.error_type == "conflict"
    assert "at line 2 and at line 6" in (result.message or "")
    assert "@@" in (result.next_action_hint or "")
    assert (workspace / "m.py").read_text() == text
    call.ok(
        "apply_patch",
        patch=patch(
            "*** Update File: m.py", "@@ class B:", "     def close(self):", "-        pass", "+        return"
        ),
    )
    assert (workspace / "m.py").read_text() == text[: text.rindex("pass")] + "return\n"


def test_a_move_onto_an_existing_file_is_refused(call: Caller, workspace: Path) -> None:
    write(workspace, {"old.txt": "from\n", "new.txt": "precious\n"})
    message = call.error(
        "apply_patch", "conflict", patch=patch("*** Update File: old.txt", "*** Move to: new.txt", "@@", "-from", "+to")
    )
    assert "the destination already exists" in message
    assert (workspace / "new.txt").read_text() == "precious\n" and (workspace / "old.txt").exists()
    # Added earlier in the same patch counts as existing too.
    call.error(
        "apply_patch",
        "conflict",
        patch=patch(
            "*** Add File: fresh.txt", "+x", "*** Update File: old.txt", "*** Move to: fresh.txt", "-from", "+to"
        ),
    )
    assert not (workspace / "fresh.txt").exists()


def test_a_move_onto_a_file_the_same_patch_deletes_first_is_allowed(call: Caller, workspace: Path) -> None:
    write(workspace, {"old.txt": "from\n", "new.txt": "precious\n"})
    out = call.ok(
        "apply_patch",
        patch=patch(
            "*** Delete File: new.txt", "*** Update File: old.txt", "*** Move to: new.txt", "@@", "-from", "+to"
        ),
    )
    assert (workspace / "new.txt").read_text() == "to\n" and not (workspace / "old.txt").exists()
    assert out["summary"] == "Success. Updated the following files:\nM new.txt\nD new.txt\n"


def test_a_move_onto_itself_is_a_plain_update(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "x\n"})
    call.ok("apply_patch", patch=patch("*** Update File: a.txt", "*** Move to: ./a.txt", "@@", "-x", "+y"))
    assert (workspace / "a.txt").read_text() == "y\n"


@pytest.mark.parametrize("spelled", ["src/../src/x.py", "./src/x.py", "src//x.py", "src/./x.py", "lib/../src/x.py"])
def test_a_path_with_dot_segments_inside_the_root_is_normalised_and_reported_normal(
    call: Caller, workspace: Path, spelled: str
) -> None:
    write(workspace, {"src/x.py": "a\n", "lib/keep": ""})
    out = call.ok("apply_patch", patch=patch(f"*** Update File: {spelled}", "@@", "-a", "+b"))
    assert out["changes"] == [{"op": "M", "path": "src/x.py"}]
    assert out["notes"] == [f"'{spelled}' was read as 'src/x.py'."]
    assert (workspace / "src/x.py").read_text() == "b\n"


def test_dot_dot_after_a_symlink_is_refused(call: Caller, workspace: Path) -> None:
    write(workspace, {"real/deep/x.py": "a\n", "x.py": "top\n"})
    os.symlink("real/deep", workspace / "link")
    # The kernel reads link/../x.py as real/x.py (missing); the eye reads x.py: refuse rather than pick one.
    message = call.error(
        "apply_patch", "invalid_input", patch=patch("*** Update File: link/../x.py", "@@", "-top", "+t")
    )
    assert "after a symlink" in message
    assert (workspace / "x.py").read_text() == "top\n"


def test_dot_dot_leaving_the_root_is_still_denied(call: Caller, workspace: Path) -> None:
    call.error("apply_patch", "denied", patch=patch("*** Add File: src/../../escape.txt", "+x"))


def test_characters_a_latin1_file_cannot_hold_are_refused_naming_the_encoding(call: Caller, workspace: Path) -> None:
    write(workspace, {"legacy.txt": "caf\xe9\nend\n".encode("latin-1")})
    message = call.error(
        "apply_patch", "invalid_input", patch=patch("*** Update File: legacy.txt", "@@", "-end", "+\u0107evap \u20ac")
    )
    assert "Latin-1 (ISO-8859-1)" in message and "'\u0107' (U+0107)" in message and "line 2" in message
    assert (workspace / "legacy.txt").read_bytes() == "caf\xe9\nend\n".encode("latin-1")
    call.ok("apply_patch", patch=patch("*** Update File: legacy.txt", "@@", "-end", "+na\xefve"))
    assert (workspace / "legacy.txt").read_bytes() == "caf\xe9\nna\xefve\n".encode("latin-1")


def test_a_lone_surrogate_is_refused_naming_utf8_never_internal(call: Caller, workspace: Path) -> None:
    message = call.error("apply_patch", "invalid_input", patch=patch("*** Add File: s.txt", "+bad \ud800 char"))
    assert "UTF-8" in message and "U+D800" in message
    assert not (workspace / "s.txt").exists()


def test_deleting_a_file_that_is_already_gone_succeeds_with_a_note(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "a\n"})
    out = call.ok("apply_patch", patch=patch("*** Delete File: gone.txt", "*** Update File: a.txt", "-a", "+b"))
    assert out["changes"] == [{"op": "M", "path": "a.txt"}]
    assert out["notes"] == ["gone.txt was already gone; there was nothing to delete."]


def test_a_patch_without_its_envelope_or_inside_a_fence_applies(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "a\n"})
    call.ok("apply_patch", patch="```\n*** Update File: a.txt\n@@\n-a\n+b\n```")
    call.ok("apply_patch", patch="*** Update File: a.txt\n@@\n-b\n+c\n")
    assert (workspace / "a.txt").read_text() == "c\n"


def test_a_unified_diff_header_is_read_as_a_bare_anchor_and_said_in_a_note(call: Caller, workspace: Path) -> None:
    write(workspace, {"f.py": "def f():\n    return 1\n"})
    out = call.ok(
        "apply_patch",
        patch=patch("*** Update File: f.py", "@@ -1,2 +1,2 @@ def f():", "-    return 1", "+    return 2"),
    )
    assert (workspace / "f.py").read_text() == "def f():\n    return 2\n"
    assert out["notes"] == ["Line 3: the unified-diff header was read as '@@ def f():'."]


def test_a_header_path_ending_in_whitespace_never_creates_a_file_with_it(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "a\n"})
    call.ok("apply_patch", patch=patch("*** Update File: a.txt", "*** Move to: b.txt \t", "@@", "-a", "+b"))
    assert names(workspace) == ["b.txt"]
    call.error(
        "apply_patch", "invalid_input", patch=patch("*** Update File: b.txt", "*** Move to: c.txt\u200b", "-b", "+c")
    )
    assert names(workspace) == ["b.txt"]


def test_a_patch_that_only_deletes_a_gone_file_succeeds_with_a_note_and_changes_nothing(
    call: Caller, workspace: Path
) -> None:
    out = call.ok("apply_patch", patch="*** Delete File: gone.txt")
    assert out["changes"] == [] and out["notes"] == ["gone.txt was already gone; there was nothing to delete."]
    assert names(workspace) == []
