"""Walking a directory tree inside the workspace the way the file tools show it.

Trust model: directories are opened from their root with ``O_NOFOLLOW`` descriptors and listed through
them, symlinks are reported but never followed, and toolrig's state, ``.git``, deny globs and (unless asked
otherwise) gitignored entries are left out.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from toolrig.sandbox.fdwalk import open_dir
from toolrig.sandbox.gitignore import IgnoreRules
from toolrig.sandbox.paths import Workspace


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    rel: str  # relative to the directory being walked, "/"-separated
    kind: str  # "file", "dir", "symlink", "other"
    size: int
    mtime: float
    depth: int
    target: str = ""  # a symlink's target, as stored


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def scan(workspace: Workspace, directory: Path) -> list[tuple[str, os.stat_result, str]]:
    """The names in a resolved directory with their ``lstat`` (and link target), read through a no-follow fd."""
    root = workspace.root_of(directory)
    fd = open_dir(root, directory.relative_to(root).parts)
    try:
        found = []
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                    target = os.readlink(entry.name, dir_fd=fd) if stat.S_ISLNK(info.st_mode) else ""
                except OSError:
                    continue
                found.append((entry.name, info, target))
        return sorted(found)
    finally:
        os.close(fd)


def visible_names(workspace: Workspace, directory: Path) -> list[str]:
    """The names in a directory a listing would show: what the workspace hides (deny globs, state) left out.

    Everything that tells a model about names (hints such as "similar names there") goes through this, so a
    denied file's name never leaks through a suggestion.
    """
    return [
        name
        for name, info, _ in scan(workspace, directory)
        if not workspace.hidden(directory / name, is_dir=stat.S_ISDIR(info.st_mode))
    ]


def walk(
    workspace: Workspace,
    start: Path,
    *,
    max_depth: int | None = None,
    rules: IgnoreRules | None = None,
    counts: dict[str, int] | None = None,
) -> Iterator[Entry]:
    """Breadth-first entries below ``start`` (depth 1 = its children). ``counts`` tallies what was left out."""
    queue: deque[tuple[Path, str, int]] = deque([(start, "", 1)])
    while queue:
        directory, prefix, depth = queue.popleft()
        try:
            names = scan(workspace, directory)
        except OSError:
            if counts is not None:
                counts["unreadable"] = counts.get("unreadable", 0) + 1
            continue
        for name, info, target in names:
            path = directory / name
            kind = _kind(info.st_mode)
            if workspace.hidden(path, is_dir=kind == "dir"):
                continue
            if rules is not None and rules.ignored(path, is_dir=kind == "dir"):
                if counts is not None:
                    counts["ignored"] = counts.get("ignored", 0) + 1
                continue
            rel = f"{prefix}{name}"
            yield Entry(path, rel, kind, info.st_size, info.st_mtime, depth, target)
            if kind == "dir":
                if max_depth is None or depth < max_depth:
                    queue.append((path, f"{rel}/", depth + 1))
                elif counts is not None:
                    counts["deeper"] = counts.get("deeper", 0) + 1
