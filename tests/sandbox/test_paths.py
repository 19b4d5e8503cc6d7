from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolrig.errors import ToolError
from toolrig.sandbox.atomic import atomic_write_text
from toolrig.sandbox.paths import Workspace


def test_relative_paths_resolve_inside_the_root(workspace: Path) -> None:
    ws = Workspace(workspace)
    assert ws.resolve("a/b.txt") == workspace.resolve() / "a/b.txt"
    assert ws.display(ws.resolve("a/b.txt")) == "a/b.txt"


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "~/.ssh/id_rsa"])
def test_escapes_are_denied(workspace: Path, path: str) -> None:
    with pytest.raises(ToolError) as caught:
        Workspace(workspace).resolve(path)
    assert caught.value.error_type.value == "denied" and "outside the workspace" in caught.value.message


def test_a_symlink_out_of_the_workspace_is_denied_and_named(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "link")
    with pytest.raises(ToolError, match="through a symlink"):
        Workspace(workspace).resolve("link/secret.txt")


def test_toolrig_state_and_home_are_never_reachable(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The workspace is the user's home directory: ~/.toolrig lies inside it and must stay out of reach.
    monkeypatch.setenv("TOOLRIG_HOME", str(workspace / "dot-toolrig"))
    ws = Workspace(workspace)
    for path in [".toolrig/config.yaml", ".toolrig/outputs/x", "dot-toolrig/config.yaml", "dot-toolrig/hooks/x.sh"]:
        with pytest.raises(ToolError, match="toolrig's own state"):
            ws.resolve(path, write=True)


def test_nul_bytes_and_empty_paths_are_refused(workspace: Path) -> None:
    ws = Workspace(workspace)
    with pytest.raises(ToolError, match="NUL"):
        ws.resolve("a\x00b")
    with pytest.raises(ToolError, match="empty"):
        ws.resolve("  ")


def test_read_only_workspace_refuses_writes(workspace: Path) -> None:
    ws = Workspace(workspace, read_only=True)
    assert ws.resolve("a.txt") == workspace.resolve() / "a.txt"
    with pytest.raises(ToolError, match="read-only"):
        ws.resolve("a.txt", write=True)


def test_extra_roots_are_allowed(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    assert Workspace(workspace, extra_roots=[extra]).resolve(str(extra / "f")) == extra.resolve() / "f"


def test_atomic_write_replaces_whole_files_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.sh"
    target.write_text("old")
    target.chmod(0o751)
    atomic_write_text(target, "new\r\nline")
    assert target.read_bytes() == b"new\r\nline"
    assert target.stat().st_mode & 0o777 == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["f.sh"]
