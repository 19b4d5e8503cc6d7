from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolrig.cancel import CancelToken, bind_token, unbind_token
from toolrig.errors import ToolError
from toolrig.sandbox.atomic import atomic_write_bytes


def test_a_cancelled_call_writes_nothing_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("before")
    token = CancelToken()
    token.cancel("timed out")
    bound = bind_token(token)
    try:
        with pytest.raises(ToolError, match="timed out"):
            atomic_write_bytes(target, b"after", root=tmp_path)
    finally:
        unbind_token(bound)
    assert target.read_text() == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_a_rollback_write_is_not_stopped_by_cancellation(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel("timed out")
    bound = bind_token(token)
    try:
        atomic_write_bytes(tmp_path / "f.txt", b"restored", root=tmp_path, cancellable=False)
    finally:
        unbind_token(bound)
    assert (tmp_path / "f.txt").read_bytes() == b"restored"


def test_a_failed_write_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old content")

    def broken_replace(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        atomic_write_bytes(target, b"new", root=tmp_path)
    assert target.read_text() == "old content"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_the_mode_of_an_existing_file_is_kept_and_new_files_follow_the_umask(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo")
    script.chmod(0o750)
    atomic_write_bytes(script, b"echo hi", root=tmp_path)
    assert script.stat().st_mode & 0o777 == 0o750
    atomic_write_bytes(tmp_path / "new.txt", b"x", root=tmp_path)
    assert (tmp_path / "new.txt").stat().st_mode & 0o111 == 0
