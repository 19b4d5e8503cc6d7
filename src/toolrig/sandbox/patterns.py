r"""Gitignore-style patterns (``*.pem``, ``secrets/``, ``**/build``, ``!keep``), one spelling everywhere.

Deny and read-only globs, ``.gitignore`` files and listing filters all use git's wildmatch rules through
pathspec, with its matching backend pinned: pathspec silently switches to re2 when that is installed.

A file name may hold any byte but ``/`` and NUL, a newline included. pathspec compiles its regexes without
``re.DOTALL`` and anchors them with ``$``, so ``.+`` stopped at a newline (``cfg\n/.env`` escaped ``.env``:
review F13) and ``$`` matched before a final one (``x.key\n`` matched ``*.key``). ``_whole_names`` recompiles
each pattern so that a newline is one more character of a name, as it is to git.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

BACKEND = "simple"


class PatternSet:
    """Compiled gitignore-style patterns; ``check`` tells matched (True), negated (False) or untouched (None)."""

    __slots__ = ("_spec", "patterns")

    def __init__(self, patterns: Iterable[str], *, braces: bool = False) -> None:
        from pathspec import GitIgnoreSpec

        kept = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
        if braces:
            kept = [variant for p in kept for variant in expand_braces(p)]
        self.patterns = tuple(kept)
        self._spec: Any = GitIgnoreSpec.from_lines(self.patterns, backend=BACKEND) if self.patterns else None
        if self._spec is not None:
            _whole_names(self._spec.patterns)

    def __bool__(self) -> bool:
        return self._spec is not None

    def check(self, rel: str, *, is_dir: bool = False) -> bool | None:
        """Match a ``/``-separated path relative to the patterns' base directory."""
        if self._spec is None:
            return None
        result = self._spec.check_file(rel + "/" if is_dir and not rel.endswith("/") else rel)
        include: bool | None = result.include
        return include

    def matches(self, rel: str, *, is_dir: bool = False) -> bool:
        return self.check(rel, is_dir=is_dir) is True

    def matches_path_or_parent(self, rel: str, *, is_dir: bool = False) -> str | None:
        """The first of ``rel``'s ancestors (or ``rel``) the patterns match, as a directory or the file itself."""
        if self._spec is None:
            return None
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if self.matches(prefix, is_dir=True):
                return prefix
        return rel if self.matches(rel, is_dir=is_dir) else None


def _whole_names(patterns: Iterable[Any]) -> None:
    r"""Each compiled pattern again with ``.`` matching a newline and ``$`` meaning the end (``\Z``), in place.

    The backend matches with the pattern objects it was given, so changing their ``regex`` changes its matching.
    """
    for pattern in patterns:
        regex = getattr(pattern, "regex", None)
        if isinstance(regex, re.Pattern) and isinstance(regex.pattern, str):
            pattern.regex = re.compile(_end_anchors(regex.pattern), regex.flags | re.DOTALL)


def _end_anchors(source: str) -> str:
    r"""``source`` with every ``$`` that is an anchor (not escaped, not in a class) written as ``\Z``."""
    out: list[str] = []
    i, opened = 0, -1  # opened: len(out) just after a class's '[' or '[^' (-1: not in a class)
    while i < len(source):
        char = source[i]
        if char == "\\":
            out.append(source[i : i + 2])
            i += 2
            continue
        if opened >= 0:
            opened = -1 if char == "]" and len(out) > opened else opened  # a ']' first in a class is literal
        elif char == "[":
            char = "[^" if source.startswith("[^", i) else "["
            opened = len(out) + 1
            i += len(char) - 1
        elif char == "$":
            char = "\\Z"
        out.append(char)
        i += 1
    return "".join(out)


def expand_braces(pattern: str, limit: int = 256) -> list[str]:
    """``src/*.{ts,tsx}`` -> ``src/*.ts``, ``src/*.tsx`` (nested braces too); git's wildmatch has no braces."""
    depth, start = 0, -1
    for index, char in enumerate(pattern):
        if char == "\\":
            continue
        if char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top(pattern[start + 1 : index])
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[index + 1 :]
                out: list[str] = []
                for option in options:
                    out.extend(expand_braces(head + option + tail, limit))
                    if len(out) > limit:
                        raise ValueError(f"the pattern {pattern!r} expands to more than {limit} globs")
                return out
    return [pattern]


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += char == "{"
        depth -= char == "}" and depth > 0
        current.append(char)
    parts.append("".join(current))
    return parts


@lru_cache(maxsize=256)
def compiled(patterns: tuple[str, ...]) -> PatternSet:
    return PatternSet(patterns)
