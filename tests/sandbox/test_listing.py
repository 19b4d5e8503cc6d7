from __future__ import annotations

import os
from pathlib import Path

from tests.support.file_helpers import git_init, write
from toolrig.sandbox.listing import walk
from toolrig.sandbox.paths import Workspace


def test_walk_is_breadth_first_skips_ignored_and_never_follows_symlinks(workspace: Path, tmp_path: Path) -> None:
    git_init(workspace)
    write(workspace, {".gitignore": "build/\n", "a/b/c/d.txt": "", "top.txt": "", "build/x.o": ""})
    write(tmp_path / "outside", {"secret.txt": ""})
    os.symlink(tmp_path / "outside", workspace / "out")
    ws = Workspace(workspace)
    counts: dict[str, int] = {}
    entries = list(walk(ws, ws.root, max_depth=2, rules=ws.ignore_rules(), counts=counts))
    rels = [e.rel for e in entries]
    assert rels == [".gitignore", "a", "out", "top.txt", "a/b"]
    assert next(e for e in entries if e.rel == "out").kind == "symlink"
    assert counts == {"ignored": 1, "deeper": 1}
