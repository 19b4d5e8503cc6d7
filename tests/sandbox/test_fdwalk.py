from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolrig.errors import ToolError
from toolrig.sandbox.fdwalk import open_dir, open_regular, read_fd


def test_read_fd_stops_one_byte_past_the_limit(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    fd = open_regular(tmp_path, ("f",))
    try:
        assert read_fd(fd, 10) == b"x" * 11
    finally:
        os.close(fd)


def test_directories_and_symlinks_are_not_opened_as_files(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    os.symlink("f", tmp_path / "link")
    with pytest.raises(ToolError, match="a directory"):
        open_regular(tmp_path, ("d",))
    with pytest.raises(ToolError, match="changed into a symlink"):
        open_regular(tmp_path, ("link",))


def test_open_dir_creates_missing_directories_and_records_them(tmp_path: Path) -> None:
    created: list[Path] = []
    fd = open_dir(tmp_path, ("a", "b"), create=True, created=created)
    os.close(fd)
    assert created == [tmp_path / "a", tmp_path / "a/b"] and (tmp_path / "a/b").is_dir()
    with pytest.raises(FileNotFoundError):
        open_dir(tmp_path, ("missing",))
