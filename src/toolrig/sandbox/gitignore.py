"""Which files git ignores: nested ``.gitignore`` files, ``.git/info/exclude`` and negations, as git reads them.

Trust model: ignore files are data, never code; they are read without following symlinks (as git does),
size-capped, and only to decide what to leave out. They come from the enclosing git repository, which is
also what ripgrep reads, so every file tool agrees with ``code_search`` and ``glob`` on what is ignored.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from toolrig.sandbox.patterns import PatternSet

MAX_IGNORE_FILE_BYTES = 1 << 20


def _read_rules(path: Path) -> PatternSet | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_IGNORE_FILE_BYTES)
    finally:
        os.close(fd)
    rules = PatternSet(data.decode("utf-8", errors="replace").split("\n"))
    return rules or None


class IgnoreRules:
    """Answers "does git ignore this path?" and caches every ignore file and directory verdict it reads.

    Git's rules, in order: a path inside an ignored directory is ignored (no negation can bring it back);
    otherwise the deepest ``.gitignore`` with a matching pattern decides (its last matching pattern wins);
    then ``.git/info/exclude``. Outside a git repository nothing is ignored, as with git and ripgrep.
    """

    def __init__(self) -> None:
        self._tops: dict[Path, Path | None] = {}
        self._files: dict[Path, PatternSet | None] = {}
        self._excludes: dict[Path, PatternSet | None] = {}
        self._dirs: dict[Path, bool] = {}

    def repo_top(self, directory: Path) -> Path | None:
        """The nearest directory at or above ``directory`` that holds ``.git``, or None."""
        chain: list[Path] = []
        current: Path | None = directory
        top: Path | None = None
        while current is not None:
            if current in self._tops:
                top = self._tops[current]
                break
            chain.append(current)
            if os.path.lexists(current / ".git"):
                top = current
                break
            current = current.parent if current.parent != current else None
        for item in chain:
            self._tops[item] = top
        return top

    def _rules(self, directory: Path) -> PatternSet | None:
        if directory not in self._files:
            self._files[directory] = _read_rules(directory / ".gitignore")
        return self._files[directory]

    def _exclude(self, top: Path) -> PatternSet | None:
        if top not in self._excludes:
            rules = None
            if os.path.isdir(top / ".git"):
                rules = _read_rules(top / ".git" / "info" / "exclude")
            self._excludes[top] = rules
        return self._excludes[top]

    def _decide(self, top: Path, parts: tuple[str, ...], is_dir: bool) -> bool:
        for depth in range(len(parts) - 1, -1, -1):
            rules = self._rules(top.joinpath(*parts[:depth]))
            if rules is not None:
                verdict = rules.check("/".join(parts[depth:]), is_dir=is_dir)
                if verdict is not None:
                    return verdict
        exclude = self._exclude(top)
        if exclude is not None:
            verdict = exclude.check("/".join(parts), is_dir=is_dir)
            if verdict is not None:
                return verdict
        return False

    def ignored(self, path: Path, *, is_dir: bool | None = None) -> bool:
        """Whether git would ignore ``path`` (an absolute, resolved path)."""
        if is_dir is None:
            is_dir = os.path.isdir(path)
        if is_dir and path in self._dirs:
            return self._dirs[path]
        top = self.repo_top(path.parent)
        verdict = False
        if top is not None and path != top:
            parts = path.relative_to(top).parts
            if ".git" not in parts:
                parent = path.parent
                verdict = (parent != top and self.ignored(parent, is_dir=True)) or self._decide(top, parts, is_dir)
        if is_dir:
            self._dirs[path] = verdict
        return verdict
