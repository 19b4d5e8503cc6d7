from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.file_helpers import Caller, write
from toolrig.sandbox.text import sha256


def test_write_file_creates_parents_and_reports_a_diff(call: Caller, workspace: Path) -> None:
    out = call.ok("write_file", path="new/dir/a.txt", content="hello\n")
    assert out["message"] == "Created new file" and out["file"] == "new/dir/a.txt"
    assert out["unified_diff"] == "--- /dev/null\n+++ b/new/dir/a.txt\n@@ -0,0 +1 @@\n+hello\n"
    assert (workspace / "new/dir/a.txt").read_text() == "hello\n" and out["hash"] == sha256(b"hello\n")


def test_write_file_overwrites_and_appends_keeping_crlf_and_mode(call: Caller, workspace: Path) -> None:
    write(workspace, {"run.bat": "echo one\r\n"})
    (workspace / "run.bat").chmod(0o755)
    out = call.ok("write_file", path="run.bat", content="echo two\n")
    assert out["message"] == "Updated file" and "-echo one\n+echo two\n" in out["unified_diff"]
    call.ok("write_file", path="run.bat", content="echo three\n", mode="append")
    assert (workspace / "run.bat").read_bytes() == b"echo two\r\necho three\r\n"
    assert (workspace / "run.bat").stat().st_mode & 0o777 == 0o755


def test_str_replace_applies_all_replacements_in_order(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": "x = 1\ny = 2\nz = x + y\n"})
    out = call.ok(
        "str_replace",
        path="a.py",
        replacements=[{"old": "x = 1", "new": "x = 10"}, {"old": "x", "new": "w", "replace_all": True}],
    )
    assert (workspace / "a.py").read_text() == "w = 10\ny = 2\nz = w + y\n"
    assert out["message"] == "Updated file" and "+w = 10" in out["unified_diff"]


def test_a_failed_replacement_changes_nothing_and_says_which_and_why(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": "def f():\n    a = 1\n    b = 2\nend\n"})
    message = call.error(
        "str_replace",
        "conflict",
        path="a.py",
        replacements=[{"old": "end", "new": "fin"}, {"old": "def f():\n    a = 1\n    c = 2", "new": ""}],
    )
    assert message.startswith("Replacement 2 of 2 failed: its 'old' text was found 0 times")
    assert "line 3 differs" in message and "'    c = 2'" in message and "'    b = 2'" in message
    assert (workspace / "a.py").read_text() == "def f():\n    a = 1\n    b = 2\nend\n"


def test_an_ambiguous_replacement_names_every_match(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "k\nk\nz\nk\n"})
    message = call.error("edit", "conflict", file_path="a.txt", old_string="k", new_string="q")
    assert "found 3 times" in message and "lines 1, 2, 4" in message


def test_replacements_are_plain_text_never_regex_or_substitutions(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "price: $1 (a.b)\n"})
    call.ok("edit", file_path="a.txt", old_string="$1 (a.b)", new_string=r"\1 $0 \n")
    assert (workspace / "a.txt").read_text() == "price: \\1 $0 \\n\n"


def test_edits_keep_crlf_and_utf16(call: Caller, workspace: Path) -> None:
    write(workspace, {"w.txt": "one\r\ntwo\r\n", "u.txt": "one\r\ntwo\r\n".encode("utf-16")})
    call.ok("edit", file_path="w.txt", old_string="one\ntwo", new_string="1\n2\n3")
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\n3\r\n"
    call.ok("str_replace", path="u.txt", replacements=[{"old": "two", "new": "deux"}])
    assert (workspace / "u.txt").read_bytes() == "one\r\ndeux\r\n".encode("utf-16")


def test_expected_hash_refuses_a_file_that_changed_since_it_was_read(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "v1\n"})
    seen = call.ok("read_files", paths=["a.txt"])["hashes"]["a.txt"]
    (workspace / "a.txt").write_text("v2\n")
    assert "changed since you read it" in call.error(
        "edit", "conflict", file_path="a.txt", old_string="v2", new_string="v3", expected_hash=seen
    )
    assert "changed since" in call.error("write_file", "conflict", path="a.txt", content="x", expected_hash=seen)
    current = call.ok("read_files", paths=["a.txt"])["hashes"]["a.txt"]
    call.ok("edit", file_path="a.txt", old_string="v2", new_string="v3", expected_hash=current[:12])
    assert (workspace / "a.txt").read_text() == "v3\n"


def test_propose_tools_validate_and_diff_but_write_nothing(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "old\n"})
    out = call.ok("propose_str_replace", path="a.txt", replacements=[{"old": "old", "new": "new"}])
    assert "-old\n+new" in out["unified_diff"] and out["message"] == "Would update file"
    created = call.ok("propose_write_file", path="b.txt", content="b\n")
    assert created["message"] == "Would create new file" and not (workspace / "b.txt").exists()
    assert (workspace / "a.txt").read_text() == "old\n"
    call.error("propose_str_replace", "conflict", path="a.txt", replacements=[{"old": "zzz", "new": "y"}])


@pytest.mark.parametrize(
    ("args", "error_type"),
    [
        ({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}, "not_found"),
        ({"file_path": "a.txt", "old_string": "", "new_string": "b"}, "invalid_input"),
        ({"file_path": "a.txt", "old_string": "same", "new_string": "same"}, "invalid_input"),
        ({"file_path": "bin.dat", "old_string": "a", "new_string": "b"}, "invalid_input"),
        ({"file_path": "d", "old_string": "a", "new_string": "b"}, "invalid_input"),
    ],
)
def test_bad_edits_fail_clearly(call: Caller, workspace: Path, args: dict[str, str], error_type: str) -> None:
    write(workspace, {"a.txt": "same\n", "bin.dat": b"\x00\x01a", "d/x": ""})
    call.error("edit", error_type, **args)


def test_edit_tools_are_refused_in_a_read_only_workspace(workspace: Path) -> None:
    write(workspace, {"a.txt": "x\n"})
    caller = Caller(workspace, {"workspace": {"read_only": True}})
    assert "read-only" in caller.error("write_file", "denied", path="a.txt", content="y")
    assert "read-only" in caller.error(
        "apply_patch", "denied", patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"
    )
    assert caller.ok("read_files", paths=["a.txt"])["files"]["a.txt"] == "     1\tx"


def test_writes_through_a_hard_link_never_reach_the_other_name(call: Caller, workspace: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared.txt"
    shared.write_text("original\n")
    os.link(shared, workspace / "linked.txt")
    call.ok("edit", file_path="linked.txt", old_string="original", new_string="changed")
    assert shared.read_text() == "original\n" and (workspace / "linked.txt").read_text() == "changed\n"


def test_subjects_name_the_paths_for_approval_patterns(call: Caller) -> None:
    registry = call.rig.registry
    edit = registry.get("edit")
    assert edit.subjects(edit.input_model(file_path="src/a.py", old_string="a", new_string="b")) == ["src/a.py"]
    patch = registry.get("apply_patch")
    text = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b/c.py\n@@\n-x\n+y\n*** Delete File: d.py\n*** End Patch"
    )
    assert patch.subjects(patch.input_model(patch=text)) == ["a.py", "b/c.py", "d.py"]


def test_write_file_writes_in_the_encoding_asked_for(call: Caller, workspace: Path) -> None:
    call.ok("write_file", path="legacy.txt", content="café\n", encoding="latin-1")
    assert (workspace / "legacy.txt").read_bytes() == "café\n".encode("latin-1")
    call.ok("write_file", path="legacy.txt", content="naïve\n")  # the file's own encoding is kept
    assert (workspace / "legacy.txt").read_bytes() == "naïve\n".encode("latin-1")
    call.ok("write_file", path="legacy.txt", content="naïve\n", encoding="utf-8")
    assert (workspace / "legacy.txt").read_bytes() == "naïve\n".encode()
    assert "cannot be written as" in call.error(
        "write_file", "invalid_input", path="l.txt", content="€", encoding="latin-1"
    )
    call.error("write_file", "invalid_input", path="l.txt", content="x", encoding="rot13")


# Issue 18 item 6: write_file's size limit, bytes_written and on_conflict (Botholomew's context_write contract).


def test_write_file_reports_the_bytes_it_wrote(call: Caller, workspace: Path) -> None:
    assert call.ok("write_file", path="a.txt", content="héllo\n")["bytes_written"] == len("héllo\n".encode())
    assert call.ok("write_file", path="a.txt", content="more\n", mode="append")["bytes_written"] == 12
    assert call.ok("propose_write_file", path="a.txt", content="x")["bytes_written"] == 0


def test_on_conflict_error_refuses_to_replace_an_existing_file_and_points_at_the_ways_on(
    call: Caller, workspace: Path
) -> None:
    write(workspace, {"notes.md": "keep me\n"})
    for tool in ("write_file", "propose_write_file"):
        result = call(tool, path="notes.md", content="gone", on_conflict="error")
        assert result.is_error and result.error_type == "path_conflict"
        hint = result.next_action_hint or ""
        assert "read_files" in hint and "on_conflict='overwrite'" in hint
    assert (workspace / "notes.md").read_text() == "keep me\n"
    assert call.ok("write_file", path="new.md", content="fresh", on_conflict="error")["message"] == "Created new file"
    appended = call.ok("write_file", path="notes.md", content="more\n", mode="append", on_conflict="error")
    assert appended["message"] == "Updated file"


def test_the_default_on_conflict_keeps_overwriting_as_before(call: Caller, workspace: Path) -> None:
    write(workspace, {"notes.md": "old\n"})
    call.ok("write_file", path="notes.md", content="new\n")
    assert (workspace / "notes.md").read_text() == "new\n"


def test_a_write_over_the_configured_size_is_too_large_and_writes_nothing(workspace: Path) -> None:
    call = Caller(workspace, {"tool_config": {"write_file": {"max_bytes": 10}}})
    message = call.error("write_file", "too_large", path="big.txt", content="x" * 11)
    assert "max_bytes" in message and not (workspace / "big.txt").exists()
    call.ok("write_file", path="small.txt", content="x" * 10)
    call.error("write_file", "too_large", path="small.txt", content="y", mode="append")
    assert (workspace / "small.txt").read_text() == "x" * 10
