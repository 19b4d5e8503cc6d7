"""The view is the file tools' policy for one call, turned into mounts; the note names what a command ran into."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from toolrig.sandbox.confine import View
from toolrig.sandbox.confine.notes import boundary_note
from toolrig.sandbox.confine.view import view_for
from toolrig.sandbox.paths import Workspace


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    (path / ".ssh").mkdir(parents=True)
    (path / ".aws").mkdir()
    (path / ".aws" / "credentials").write_text("x")
    (path / ".netrc").write_text("x")
    monkeypatch.setenv("HOME", str(path))
    return path


def test_the_default_view_writes_the_roots_and_hides_state_and_secrets(workspace: Path, home: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    view = view_for(Workspace(workspace), cwd=workspace, tmp="/t")
    assert view.writable == (str(workspace),)
    assert str(workspace / ".toolrig") in view.sealed  # missing: made empty and read-only, so none can be created
    assert {str(workspace / ".git" / "hooks"), str(workspace / ".git" / "config")} <= set(view.read_only)
    assert {str(home / ".ssh"), str(home / ".aws")} <= set(view.hidden_dirs)
    assert str(home / ".netrc") in view.hidden_files
    assert view.label(str(home / ".ssh")) == "~/.ssh"


def test_deny_globs_hide_nested_files_and_directories_once(workspace: Path, home: Path) -> None:
    (workspace / "a" / "secrets" / "deep").mkdir(parents=True)
    (workspace / "a" / "secrets" / "deep" / ".env").write_text("x")
    (workspace / "b").mkdir()
    (workspace / "b" / ".env").write_text("x")
    (workspace / "link.env").symlink_to(workspace / "b" / ".env")
    view = view_for(Workspace(workspace, deny_globs=[".env", "secrets/", "*.env"]), cwd=workspace, tmp="/t")
    assert str(workspace / "a" / "secrets") in view.hidden_dirs
    assert str(workspace / "b" / ".env") in view.hidden_files
    assert not any("secrets/deep" in f for f in view.hidden_files)  # inside a hidden directory already
    assert str(workspace / "link.env") not in view.hidden_files  # a symlink is not masked: its target is


def test_allowed_paths_empty_the_root_and_bind_back_what_they_match(workspace: Path, home: Path) -> None:
    (workspace / "src" / "x").mkdir(parents=True)
    (workspace / "docs").mkdir()
    view = view_for(Workspace(workspace), cwd=workspace / "docs", tmp="/t", allowed_paths=["src/**"])
    assert view.emptied == (str(workspace),)
    assert view.writable == (str(workspace / "src"),)
    assert view.cwd == str(workspace)  # the asked directory is outside the narrowed view


def test_a_read_only_workspace_is_bound_read_only(workspace: Path, home: Path) -> None:
    view = view_for(Workspace(workspace, read_only=True), cwd=workspace, tmp="/t")
    assert view.writable == () and str(workspace) in view.read_only and view.sealed == ()


def test_config_adds_hidden_paths_and_write_paths(workspace: Path, home: Path, tmp_path: Path) -> None:
    (home / "cache").mkdir()
    (home / "private").mkdir()
    view = view_for(
        Workspace(workspace), cwd=workspace, tmp="/t", write_paths=[str(home / "cache")], hidden_paths=["~/private"]
    )
    assert str(home / "cache") in view.writable and str(home / "private") in view.hidden_dirs


VIEW = View(
    writable=("/w",),
    cwd="/w",
    tmp="/t",
    read_only=("/w/.git/hooks",),
    hidden_dirs=("/h/.ssh",),
    hidden_files=("/w/.env",),
    labels={"/h/.ssh": "~/.ssh", "/w/.env": ".env", "/w/.git/hooks": ".git/hooks"},
)


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        ("cat: .env: Permission denied\n", "'.env' is not visible to commands"),
        ("ls: cannot open directory '/h/.ssh': Permission denied\n", "'~/.ssh' is not visible"),
        ("bash: .git/hooks/pre-commit: Read-only file system\n", "'.git/hooks' is read-only for commands"),
        ("touch: cannot touch '/etc/x': Read-only file system\n", "'/etc/x' is read-only for commands"),
        ("curl: (6) Could not resolve host: example.com\n", "commands have no network here"),
    ],
)
def test_the_note_names_the_boundary(stderr: str, expected: str) -> None:
    note = boundary_note(VIEW, stderr, 1)
    assert note is not None and expected in note, note


def test_no_note_for_an_ordinary_failure() -> None:
    assert boundary_note(VIEW, "cat: missing.txt: No such file or directory\n", 1) is None
    assert boundary_note(VIEW, "", 0) is None
