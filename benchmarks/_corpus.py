"""A large real source tree made on the spot: this venv's site-packages, hard-linked into a temp directory.

Hard links make the copy take a second instead of copying 300 MB; the files are the same bytes either way.
The corpus lives outside the repository and is removed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

MIN_FILES = 20_000


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def make_corpus() -> tuple[Path, int]:
    """Return the corpus root and its number of files (at least 20,000)."""
    source = Path(sysconfig.get_paths()["purelib"])
    base = Path(tempfile.mkdtemp(prefix="toolrig-corpus-"))
    atexit.register(shutil.rmtree, base, True)
    root = base / "site-packages"
    shutil.copytree(source, root, symlinks=True, copy_function=_link_or_copy, ignore=shutil.ignore_patterns(".toolrig"))
    count = sum(len(files) for _, _, files in os.walk(root))
    if count < MIN_FILES:
        raise SystemExit(f"the corpus has {count} files, fewer than {MIN_FILES}: install more packages in the venv")
    return root, count


def warm_up(root: Path, rg: str) -> None:
    """Read the whole tree once: idle pages are evicted on these VMs and a cold first search is 15x slower."""
    for _ in range(2):
        subprocess.run([rg, "--no-config", "-c", "zzzzqqqq", "."], cwd=root, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, check=False)  # fmt: skip
