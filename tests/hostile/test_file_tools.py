"""Every file tool with a path field, against paths that try to leave the workspace.

Nothing outside the workspace may be read or written; every refusal is a ``denied`` result that says why.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.file_helpers import Caller, write
from toolrig.sandbox.paths import Workspace

SECRET = "SECRET-OUTSIDE"


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    tree: dict[str, tuple[bytes | None, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        tree[str(path.relative_to(root))] = (data, info.st_mtime_ns)
    return tree


@pytest.fixture
def arena(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    write(outside, {"secret.txt": f"{SECRET}\n", "sub/deeper.txt": f"{SECRET} deeper\n", "hard.txt": f"{SECRET}\n"})
    ws = tmp_path / "ws"
    write(ws, {"ok.txt": "inside\n", "sub/f.txt": "inside\n"})
    os.symlink(outside / "secret.txt", ws / "link_file")
    os.symlink(outside, ws / "link_dir")
    os.symlink("../..", ws / "sub" / "up")
    os.symlink("loop_b", ws / "loop_a")
    os.symlink("loop_a", ws / "loop_b")
    os.link(outside / "hard.txt", ws / "hard.txt")
    return {"ws": ws, "outside": outside, "tmp": tmp_path}


def spellings(outside: Path) -> list[str]:
    return [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "./../outside/secret.txt",
        "..",
        str(outside / "secret.txt"),
        f"//{outside}/secret.txt",
        "/etc/passwd",
        "~/../../etc/passwd",
        "link_file",
        "link_dir",
        "link_dir/secret.txt",
        "link_dir/sub/deeper.txt",
        "sub/up/outside/secret.txt",
        "loop_a",
        "loop_b/x.txt",
        "ok\x00.txt",
        "ok.txt\x00../../outside/secret.txt",
        ".toolrig/config.yaml",
    ]


def _update(path: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{SECRET}\n+pwned\n*** End Patch"


PATH_CALLS: dict[str, Callable[[str], tuple[str, dict[str, Any]]]] = {
    "read_files": lambda p: ("read_files", {"paths": [p]}),
    "read_subtree": lambda p: ("read_subtree", {"paths": [p]}),
    "list_directory": lambda p: ("list_directory", {"directories": [{"path": p, "recursive": True}]}),
    "glob": lambda p: ("glob", {"pattern": "**/*", "cwd": p}),
    "code_search": lambda p: ("code_search", {"pattern": "SECRET", "cwd": p}),
    "write_file": lambda p: ("write_file", {"path": p, "content": "pwned"}),
    "write_file_append": lambda p: ("write_file", {"path": p, "content": "pwned", "mode": "append"}),
    "propose_write_file": lambda p: ("propose_write_file", {"path": p, "content": "pwned"}),
    "str_replace": lambda p: ("str_replace", {"path": p, "replacements": [{"old": SECRET, "new": "pwned"}]}),
    "propose_str_replace": lambda p: (
        "propose_str_replace",
        {"path": p, "replacements": [{"old": SECRET, "new": "x"}]},
    ),
    "edit": lambda p: ("edit", {"file_path": p, "old_string": SECRET, "new_string": "pwned"}),
    "apply_patch_add": lambda p: (
        "apply_patch",
        {"patch": f"*** Begin Patch\n*** Add File: {p}\n+pwned\n*** End Patch"},
    ),
    "apply_patch_delete": lambda p: ("apply_patch", {"patch": f"*** Begin Patch\n*** Delete File: {p}\n*** End Patch"}),
    "apply_patch_update": lambda p: ("apply_patch", {"patch": _update(p)}),
    "apply_patch_move_to": lambda p: (
        "apply_patch",
        {"patch": f"*** Begin Patch\n*** Update File: ok.txt\n*** Move to: {p}\n@@\n-inside\n+pwned\n*** End Patch"},
    ),
}


@pytest.mark.parametrize("tool", sorted(PATH_CALLS))
def test_every_escape_spelling_is_denied_and_nothing_outside_is_touched(tool: str, arena: dict[str, Path]) -> None:
    caller = Caller(arena["ws"])
    before = snapshot(arena["outside"])
    inside_before = (arena["ws"] / "ok.txt").read_bytes()
    for spelled in spellings(arena["outside"]):
        name, args = PATH_CALLS[tool](spelled)
        result = caller(name, **args)
        assert result.is_error, f"{tool} accepted {spelled!r}: {result.output}"
        assert result.error_type == "denied", (spelled, result.error_type, result.message)
        assert result.message and SECRET not in result.to_json()
    assert snapshot(arena["outside"]) == before
    assert (arena["ws"] / "ok.txt").read_bytes() == inside_before  # all or nothing: no partial move


@pytest.mark.parametrize("tool", sorted(PATH_CALLS))
def test_overlong_paths_are_refused_cleanly(tool: str, arena: dict[str, Path]) -> None:
    caller = Caller(arena["ws"])
    for spelled in ["d/" * 2100 + "x", "x" * 300]:
        name, args = PATH_CALLS[tool](spelled)
        result = caller(name, **args)
        assert result.is_error and result.error_type in {"invalid_input", "denied"}, result.message
        assert "longer than" in (result.message or "")


UNICODE = "ünï/cödé 文件 ☃.txt"


def test_unicode_paths_work_in_every_tool(arena: dict[str, Path]) -> None:
    ws = arena["ws"]
    caller = Caller(ws)
    caller.ok("write_file", path=UNICODE, content="naïve café\n")
    assert caller.ok("read_files", paths=[UNICODE])["files"][UNICODE] == "     1\tnaïve café"
    caller.ok("edit", file_path=UNICODE, old_string="café", new_string="☕")
    assert caller.ok("glob", pattern="**/*.txt", cwd="ünï")["files"] == [UNICODE]
    assert caller.ok("code_search", pattern="☕")["output"] == f"{UNICODE}:1: naïve ☕"
    moved = "ünï/moved ✓.txt"
    patch = f"*** Begin Patch\n*** Update File: {UNICODE}\n*** Move to: {moved}\n@@\n-naïve ☕\n+done\n*** End Patch"
    caller.ok("apply_patch", patch=patch)
    assert (ws / moved).read_text() == "done\n"
    assert [e["name"] for e in caller.ok("list_directory", directories=[{"path": "ünï"}])["listings"]["ünï"]] == [
        "moved ✓.txt"
    ]


def test_hard_links_are_read_as_workspace_files_but_writes_never_reach_the_other_name(
    arena: dict[str, Path],
) -> None:
    caller = Caller(arena["ws"])
    outside_file = arena["outside"] / "hard.txt"
    caller.ok("write_file", path="hard.txt", content="replaced\n")
    assert outside_file.read_text() == f"{SECRET}\n"
    os.unlink(arena["ws"] / "hard.txt")
    os.link(outside_file, arena["ws"] / "hard.txt")
    caller.ok("apply_patch", patch=_update("hard.txt"))
    assert outside_file.read_text() == f"{SECRET}\n"
    os.unlink(arena["ws"] / "hard.txt")
    os.link(outside_file, arena["ws"] / "hard.txt")
    caller.ok("apply_patch", patch="*** Begin Patch\n*** Delete File: hard.txt\n*** End Patch")
    assert outside_file.read_text() == f"{SECRET}\n"


SWAPPING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_files", {"paths": ["sub/f.txt"]}),
    ("write_file", {"path": "sub/f.txt", "content": "pwned"}),
    ("edit", {"file_path": "sub/f.txt", "old_string": "inside", "new_string": "pwned"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: sub/f.txt\n@@\n-inside\n+pwned\n*** End Patch"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: sub/new.txt\n+pwned\n*** End Patch"}),
    ("list_directory", {"directories": [{"path": "sub"}]}),
    ("read_subtree", {"paths": ["sub"]}),
]


@pytest.mark.parametrize(("name", "args"), SWAPPING_CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SWAPPING_CALLS)])
def test_a_directory_swapped_for_a_symlink_during_the_call_is_not_followed(
    name: str, args: dict[str, Any], arena: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, outside = arena["ws"], arena["outside"]
    write(outside, {"f.txt": f"{SECRET}\n"})
    before = snapshot(outside)
    real_resolve = Workspace.resolve

    def resolve_then_swap(self: Workspace, path: str, *, write: bool = False) -> Path:
        resolved = real_resolve(self, path, write=write)
        sub = ws / "sub"
        if not sub.is_symlink():  # the attacker wins the race right after the check
            for child in sub.iterdir():
                child.unlink()
            sub.rmdir()
            os.symlink(outside, sub)
        return resolved

    monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)
    result = Caller(ws)(name, **args)
    assert SECRET not in result.to_json()
    assert snapshot(outside) == before
    if name not in ("read_files", "read_subtree", "list_directory"):
        assert result.is_error and result.error_type == "denied" and "changed into a symlink" in (result.message or "")
