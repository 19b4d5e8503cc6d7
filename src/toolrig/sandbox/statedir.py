"""toolrig's own state directories (``.toolrig/`` in a workspace, ``~/.toolrig/``), reached without following symlinks.

Trust model: a cloned repository can commit anything into its ``.toolrig/``, symlinks included, so the state
dir is as hostile as the workspace. Every file toolrig reads or writes there is reached one component at a
time from the directory that holds the state dir (the workspace root or the home directory, trusted as
given) with ``O_NOFOLLOW``: a symlink on the way is refused, never followed and never replaced. No write
lands in a hooks directory, whatever path leads there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox import fdwalk
from toolrig.sandbox.atomic import atomic_write_bytes
from toolrig.sandbox.paths import STATE_DIR_NAME, toolrig_home

SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def committed_link(path: Path | str) -> ToolError:
    """The error for a symlink (or a file where a directory belongs) inside a state directory."""
    return ToolError(
        ErrorType.DENIED,
        f"toolrig's state path '{path}' is a symlink or not what toolrig put there; toolrig never follows "
        "symlinks in its state directory.",
        f"Ask the user to remove it (a cloned repository may have shipped it): rm -r '{path}'. toolrig recreates "
        "what it needs.",
        retryable=False,
    )


def _hooks_directories(base: Path) -> list[tuple[int, int]]:
    found = []
    for directory in (toolrig_home() / "hooks", base / STATE_DIR_NAME / "hooks"):
        with contextlib.suppress(OSError):
            info = os.stat(directory)
            found.append((info.st_dev, info.st_ino))
    return found


@dataclass(frozen=True, slots=True)
class StatePath:
    """A directory inside a state dir: ``base`` is trusted as given, ``parts`` are walked without following links."""

    base: Path
    parts: tuple[str, ...]

    @classmethod
    def of(cls, path: Path) -> StatePath:
        """Split at the outermost ``.toolrig`` component; a path without one is walked from its parent."""
        absolute = Path(os.path.abspath(path))
        parts = absolute.parts
        index = parts.index(STATE_DIR_NAME) if STATE_DIR_NAME in parts else len(parts) - 1
        index = max(index, 1)  # never walk from nothing: '/' is the least base there is
        return cls(Path(*parts[:index]), tuple(parts[index:]))

    @property
    def path(self) -> Path:
        return self.base.joinpath(*self.parts)

    def child(self, *names: str) -> StatePath:
        return StatePath(self.base, (*self.parts, *names))

    def open_dir(self, *names: str, create: bool = True) -> int:
        """A descriptor for the directory ``names`` below this one, made when missing (``create``)."""
        return fdwalk.open_dir(self.base, (*self.parts, *names), create=create, on_link=committed_link)

    @contextlib.contextmanager
    def directory(self, *names: str, create: bool = True) -> Iterator[int]:
        fd = self.open_dir(*names, create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    def lstat(self, *names: str) -> os.stat_result | None:
        """The entry's own status (a symlink is refused); None when it does not exist."""
        *dirs, name = names
        try:
            with self.directory(*dirs, create=False) as fd:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(info.st_mode):
            raise committed_link(self.path.joinpath(*names))
        return info

    def read_bytes(self, *names: str) -> bytes:
        """A regular file's bytes; ``FileNotFoundError`` when it (or a directory on the way) is missing."""
        fd = fdwalk.open_regular(self.base, (*self.parts, *names), on_link=committed_link)
        try:
            return fdwalk.read_fd(fd)
        finally:
            os.close(fd)

    def write_bytes(self, *names: str, data: bytes) -> None:
        """Atomically (re)write a file, creating directories on the way; symlinks and hooks dirs are refused."""
        *dirs, name = names
        with self.directory(*dirs) as fd:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) in _hooks_directories(self.base):
                raise ToolError(
                    ErrorType.DENIED,
                    f"'{self.path.joinpath(*dirs)}' is a hooks directory; no tool may write there.",
                    retryable=False,
                )
            try:
                current = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and not stat.S_ISREG(current.st_mode):
                raise committed_link(self.path.joinpath(*names))
        atomic_write_bytes(self.path.joinpath(*names), data, root=self.base, make_parents=True, cancellable=False)

    def open_append(self, *names: str) -> int:
        """A descriptor appending to a log file (created when missing); a link in its place is refused."""
        *dirs, name = names
        with self.directory(*dirs) as fd:
            try:
                return os.open(
                    name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
                )
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                    raise committed_link(self.path.joinpath(*names)) from None
                raise

    def entries(self, *names: str) -> list[tuple[str, os.stat_result]]:
        """The directory's entries with their own status (symlinks left out: they are never followed)."""
        try:
            fd = self.open_dir(*names, create=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        try:
            for name in os.listdir(fd):
                with contextlib.suppress(FileNotFoundError):
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISLNK(info.st_mode):
                        found.append((name, info))
        finally:
            os.close(fd)
        return found


def prepare_database(path: Path) -> None:
    """Make a SQLite file's directory (no symlink on the way) and refuse a file or sidecar that is a symlink.

    SQLite opens its files by name and follows links, so a committed ``.toolrig/audit.db -> ~/.bashrc`` would
    make toolrig write elsewhere; checked here just before the connection is opened.
    """
    location = StatePath.of(path.parent)
    with location.directory() as fd:
        for name in (path.name, *(path.name + suffix for suffix in SQLITE_SIDECARS)):
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(info.st_mode):
                raise committed_link(path.parent / name)
