from __future__ import annotations

import os
import subprocess
from pathlib import Path

from toolrig.sandbox import landlock
from toolrig.sandbox.ripgrep import rg_binary


def _confined_rg(directory: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        process, confined = landlock.spawn(
            [rg_binary(), "--no-config", *args],
            directories=[fd],
            cwd=directory.parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(fd)
    out, err = process.communicate()
    assert confined
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_a_confined_process_reads_below_its_directory_and_nothing_beside_it(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "inside" / "a.txt").write_text("needle inside\n")
    (tmp_path / "outside" / "b.txt").write_text("needle outside\n")
    (tmp_path / "inside" / "link").symlink_to(tmp_path / "outside")
    done = _confined_rg(tmp_path / "inside", "--follow", "needle", "--", "inside", "outside")
    assert b"needle inside" in done.stdout
    assert b"needle outside" not in done.stdout
    assert b"Permission denied" in done.stderr


def test_toolrig_itself_stays_unconfined_after_spawning(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    _confined_rg(tmp_path / "inside", "--files", "--", "inside")
    (tmp_path / "beside.txt").write_text("x")
    assert (tmp_path / "beside.txt").read_text() == "x" and os.listdir("/")  # this thread was never restricted
