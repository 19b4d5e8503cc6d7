"""Workspace: the directories a tool may touch, and the one place that turns a model's path into a real one.

Trust model: every path a model sends is hostile. It is resolved (symlinks included) and must land inside
one of the roots; toolrig's own state (``.toolrig/``, the user's toolrig home) is never reachable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from toolrig.errors import ErrorType, ToolError

STATE_DIR_NAME = ".toolrig"


def toolrig_home() -> Path:
    """The user's toolrig directory (config, trust list, hooks); ``TOOLRIG_HOME`` overrides it."""
    override = os.environ.get("TOOLRIG_HOME")
    return Path(override).expanduser() if override else Path.home() / STATE_DIR_NAME


def _denied(message: str, hint: str | None = None) -> ToolError:
    return ToolError(ErrorType.DENIED, message, hint or "Use a path inside the workspace.")


def is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class Workspace:
    """The roots a tool may read and write, with toolrig's own state carved out."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        extra_roots: Iterable[str | os.PathLike[str]] = (),
        read_only: bool = False,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace root is not a directory: {self.root}")
        self.extra_roots = tuple(Path(p).expanduser().resolve() for p in extra_roots)
        self.read_only = read_only
        self.state_dir = self.root / STATE_DIR_NAME
        self._protected = (self.state_dir, toolrig_home().resolve())

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.root, *self.extra_roots)

    def state_path(self, *parts: str) -> Path:
        """A path under ``.toolrig/`` for toolrig's own stores, created on demand; never given to a model."""
        path = self.state_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Resolve a model-supplied path, or raise ``denied`` / ``invalid_input`` with the reason."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError(
                ErrorType.INVALID_INPUT, "The path is empty.", "Give a path relative to the workspace root."
            )
        if "\x00" in path:
            raise _denied("The path contains a NUL byte.")
        candidate = Path(path).expanduser() if path.startswith("~") else Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = Path(os.path.realpath(candidate))
        if not any(is_within(resolved, root) for root in self.roots):
            if resolved != Path(os.path.abspath(candidate)):
                raise _denied(f"'{path}' leads through a symlink to {resolved}, outside the workspace.")
            raise _denied(f"'{path}' is outside the workspace ({self.root}).")
        if any(is_within(resolved, protected) for protected in self._protected):
            raise _denied(f"'{path}' is toolrig's own state; tools may not touch it.")
        if write and self.read_only:
            raise _denied("The workspace is read-only for tools.", "Read, don't write; ask the user to lift read-only.")
        return resolved

    def display(self, path: Path) -> str:
        """The path as a model should see it: relative to the root when inside it."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)
