from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

from toolrig.sandbox.ripgrep import glob_filter, list_files, rg_binary


def test_the_binary_comes_from_the_installed_ripgrep_wheel() -> None:
    binary = Path(rg_binary())
    assert binary.parent == Path(sysconfig.get_path("scripts")).resolve() or "site-packages" in str(binary)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("ripgrep 14.1.0")


def test_positive_globs_become_a_file_type_and_directory_parts_a_check() -> None:
    selection = glob_filter(["src/**/*.{py,pyi}", "!src/gen/**"], ".")
    assert "--type-add=toolrigglob:*.{py,pyi}" in selection.argv and "--glob=!src/gen/**" in selection.argv
    assert selection.accepts("src/a/b.py") and selection.accepts("./src/b.pyi")
    assert not selection.accepts("lib/b.py") and not selection.accepts("src/.hidden/b.py")


def test_list_files_stops_at_its_limit(tmp_path: Path) -> None:
    for index in range(30):
        (tmp_path / f"f{index}.txt").write_text("x")
    files, cut = list_files(tmp_path, ["."], limit=10)
    assert cut and 10 < len(files) <= 30
