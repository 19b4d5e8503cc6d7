"""Workspace: the directories a tool may touch, and the one place that turns a model's path into a real one.

Trust model: every path a model sends is hostile. It is resolved (symlinks included) and must land inside
one of the roots, outside deny globs and toolrig's own state; files are then opened component by component
without following symlinks, so a swap between the check and the use is refused rather than followed.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox import fdwalk
from toolrig.sandbox.journal import Change, Journal, Recorder
from toolrig.sandbox.patterns import PatternSet

if TYPE_CHECKING:
    from toolrig.sandbox.gitignore import IgnoreRules

STATE_DIR_NAME = ".toolrig"
GIT_DIR_NAME = ".git"
MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255


def toolrig_home() -> Path:
    """The user's toolrig directory (config, trust list, hooks); ``TOOLRIG_HOME`` overrides it."""
    override = os.environ.get("TOOLRIG_HOME")
    return Path(override).expanduser() if override else Path.home() / STATE_DIR_NAME


def _denied(message: str, hint: str | None = None) -> ToolError:
    return ToolError(ErrorType.DENIED, message, hint or "Use a path inside the workspace.")


class StateDirectoryError(ToolError):
    """A directory on the way is toolrig's own state directory, known by its identity whatever its name is now."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            ErrorType.DENIED,
            f"'{path}' is (or is inside) toolrig's own state directory, renamed or moved; commands never start there.",
            "Start the command in a directory of the workspace's own.",
        )


MAX_STATE_IDENTITIES = 16  # held open; older ones that still exist are remembered without a descriptor
MAX_STATE_REMEMBERED = 65_536  # ~10 MB at most; each one takes a command that renamed the state directory


def _close_all(fds: dict[tuple[int, int], int]) -> None:
    for fd in fds.values():
        if fd >= 0:
            os.close(fd)
    fds.clear()


def is_within(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it (both absolute and normalised); string work, no filesystem access."""
    inner, outer = str(path), str(root)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


class Workspace:
    """The roots a tool may read and write, with toolrig's own state carved out.

    ``deny_globs`` (gitignore-style, relative to the root) can be neither read nor written;
    ``read_only_globs`` can be read only; writes into ``.git/`` are always refused. Both apply to the
    path as given and to the target it resolves to, so a symlink cannot launder a denied file.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        extra_roots: Iterable[str | os.PathLike[str]] = (),
        read_only: bool = False,
        deny_globs: Iterable[str] = (),
        read_only_globs: Iterable[str] = (),
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace root is not a directory: {self.root}")
        self.extra_roots = tuple(Path(p).expanduser().resolve() for p in extra_roots)
        self.read_only = read_only
        self.state_dir = self.root / STATE_DIR_NAME
        self._protected = (self.state_dir, toolrig_home().resolve())
        self.deny_globs = tuple(deny_globs)
        self.read_only_globs = tuple(read_only_globs)
        self._deny = PatternSet(self.deny_globs) if self.deny_globs else None
        self._read_only = PatternSet(self.read_only_globs) if self.read_only_globs else None
        # Every directory seen under a protected name, by identity, the newest held open by an O_PATH descriptor so
        # that its inode number cannot be reused by another directory while it is remembered (-1: not held).
        self._state_fds: dict[tuple[int, int], int] = {}
        self._state_lock = threading.Lock()
        weakref.finalize(self, _close_all, self._state_fds)
        self.state_identities()

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.root, *self.extra_roots)

    @property
    def protected(self) -> tuple[Path, ...]:
        """Directories no tool may see: the workspace's ``.toolrig/`` and the user's toolrig home."""
        return self._protected

    def state_path(self, *parts: str) -> Path:
        """A path under ``.toolrig/`` for toolrig's own stores, created on demand; never given to a model."""
        path = self.state_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    # ------------------------------------------------------------------------------ resolving

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Resolve a model-supplied path, or raise ``denied`` / ``invalid_input`` with the reason."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError(
                ErrorType.INVALID_INPUT, "The path is empty.", "Give a path relative to the workspace root."
            )
        if "\x00" in path:
            raise _denied("The path contains a NUL byte.")
        _check_spelling(path)
        candidate = _expand_home(path) if path.startswith("~") else Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        lexical = Path(os.path.normpath(candidate))
        resolved = _realpath(candidate, path)
        if not any(is_within(resolved, root) for root in self.roots):
            if resolved != lexical:
                raise _denied(f"'{path}' leads through a symlink to {resolved}, outside the workspace.")
            raise _denied(f"'{path}' is outside the workspace ({self.root}).")
        if any(is_within(resolved, protected) or is_within(lexical, protected) for protected in self._protected):
            raise _denied(f"'{path}' is toolrig's own state; tools may not touch it.")
        self._check_globs(path, lexical, resolved, write=write)
        try:
            mode = os.lstat(resolved).st_mode
        except OSError:
            mode = 0
        if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise fdwalk.not_regular(path, mode)
        if write and self.read_only:
            raise _denied("The workspace is read-only for tools.", "Read, don't write; ask the user to lift read-only.")
        return resolved

    def _check_globs(self, spelled: str, lexical: Path, resolved: Path, *, write: bool) -> None:
        if self._deny is None and not write:
            return
        is_dir = os.path.isdir(resolved)
        for candidate in dict.fromkeys((lexical, resolved)):
            rel = self._relative_or_none(candidate)
            if rel is None or rel == ".":
                continue
            via = "" if candidate == lexical else f" (through a symlink to '{rel}')"
            if self._deny is not None and (hit := self._deny.matches_path_or_parent(rel, is_dir=is_dir)):
                raise _denied(
                    f"'{spelled}'{via} matches the workspace's deny globs ('{hit}'); tools may not use it.",
                    "Leave this file alone; ask the user if you really need it.",
                )
            if not write:
                continue
            if GIT_DIR_NAME in rel.split("/"):
                raise _denied(
                    f"'{spelled}'{via} is inside a .git directory; tools may not write git's internals.",
                    "Change the repository through git commands the user runs, not by editing .git/.",
                )
            if self._read_only is not None and (hit := self._read_only.matches_path_or_parent(rel, is_dir=is_dir)):
                raise _denied(
                    f"'{spelled}'{via} is read-only (workspace read-only globs: '{hit}').",
                    "Read it, don't change it; ask the user to lift read-only.",
                )

    def root_of(self, path: Path) -> Path:
        """The root that holds ``path`` (the deepest, when roots nest)."""
        found = [root for root in self.roots if is_within(path, root)]
        if not found:
            raise _denied(f"'{path}' is outside the workspace ({self.root}).")
        return max(found, key=lambda r: len(r.parts))

    def _relative_or_none(self, path: Path) -> str | None:
        text = str(path)
        best = ""
        for root in self.roots:
            outer = str(root)
            if (text == outer or text.startswith(outer.rstrip("/") + "/")) and len(outer) > len(best):
                best = outer
        if not best:
            return None
        return text[len(best) :].lstrip("/") or "."

    def relative(self, path: Path) -> str:
        """``path`` relative to its root, ``/``-separated (what deny globs and .gitignore match)."""
        rel = self._relative_or_none(path)
        if rel is None:
            raise _denied(f"'{path}' is outside the workspace ({self.root}).")
        return rel

    def hidden(self, path: Path, *, is_dir: bool = False) -> bool:
        """Whether a path found while listing must stay out of sight (toolrig state, deny globs, ``.git``)."""
        if any(is_within(path, protected) for protected in self._protected):
            return True
        rel = self._relative_or_none(path)
        if rel is None:
            return True
        if GIT_DIR_NAME in rel.split("/"):
            return True
        return self._deny is not None and self._deny.matches_path_or_parent(rel, is_dir=is_dir) is not None

    def exclusion_globs(self, root: Path) -> list[str]:
        """Gitignore-style globs (relative to ``root``) for what listings must skip beyond .git and .toolrig."""
        globs = list(self.deny_globs)
        for protected in self._protected:
            if protected != root and is_within(protected, root):
                globs.append("/" + protected.relative_to(root).as_posix())
        return globs

    def display(self, path: Path) -> str:
        """The path as a model should see it: relative to the root when inside it."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)

    def ignore_rules(self) -> IgnoreRules:
        """Fresh .gitignore rules for one call (they cache what they read)."""
        from toolrig.sandbox.gitignore import IgnoreRules

        return IgnoreRules()

    # ------------------------------------------------------------------------------ file access

    def _parts(self, path: Path) -> tuple[Path, tuple[str, ...]]:
        root = self.root_of(path)
        return root, path.relative_to(root).parts

    def open_regular(self, path: Path) -> int:
        """A read descriptor for a resolved path, opened without following any symlink on the way."""
        root, parts = self._parts(path)
        return fdwalk.open_regular(root, parts)

    def state_identities(self) -> dict[tuple[int, int], int]:
        """The identities of every directory seen under a protected name (``.toolrig``, toolrig's home), now included.

        ``resolve`` refuses toolrig's state by name; a directory renamed keeps its identity (``mv .toolrig x``,
        then ``cd x``), so where a name is not enough (the directory a command starts in) the identity is checked.
        Looked at again on each call: a state directory that was renamed and then made again is two identities.
        Held open (O_PATH, close-on-exec), so a remembered inode number is never that of a new directory; past
        ``MAX_STATE_IDENTITIES`` held, the oldest is let go (``_forget_some``) but never forgotten while it exists:
        forgetting the oldest let 17 commands that each renamed ``.toolrig`` push the live state out of memory.
        """
        for directory in self._protected:
            try:
                info = os.stat(directory, follow_symlinks=False)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in self._state_fds or not stat.S_ISDIR(info.st_mode):
                continue
            try:
                fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            info = os.fstat(fd)  # what is held open, should the name have changed since the stat
            with self._state_lock:
                key = (info.st_dev, info.st_ino)
                if key in self._state_fds:
                    os.close(fd)
                    continue
                self._state_fds[key] = fd
                self._forget_some()
        return self._state_fds

    def _forget_some(self) -> None:
        """Keep at most ``MAX_STATE_IDENTITIES`` descriptors: drop the deleted, then let the oldest go unheld.

        A deleted directory can never be a start directory again, so it is forgotten. One that still exists stays
        refused without its descriptor; should it be deleted later and its inode number given to a new directory,
        that one is refused too (a false refusal, the safe side).
        """
        held = [key for key, fd in self._state_fds.items() if fd >= 0]
        if len(held) <= MAX_STATE_IDENTITIES:
            return
        for key in held:
            if os.fstat(self._state_fds[key]).st_nlink == 0:
                os.close(self._state_fds.pop(key))
        held = [key for key, fd in self._state_fds.items() if fd >= 0]
        for key in held[: max(0, len(held) - MAX_STATE_IDENTITIES)]:
            os.close(self._state_fds[key])
            self._state_fds[key] = -1
        while len(self._state_fds) > MAX_STATE_REMEMBERED:
            fd = self._state_fds.pop(next(iter(self._state_fds)))
            if fd >= 0:
                os.close(fd)

    def open_dir(self, path: Path) -> int:
        """A descriptor to start a command in: ``O_PATH``, from its root, following no symlink, never toolrig's state.

        What ``resolve`` checked is then what the descriptor holds: a component swapped for a symlink (or a file)
        since is refused, not followed, and a user of the descriptor never walks the path again. ``O_PATH``: a
        directory that may be searched but not listed can be entered, as a shell's ``cd`` would. Every component is
        also compared with toolrig's state directories by identity (``StateDirectoryError``): ``resolve`` knows
        them only by name, and a command can rename one.
        """
        refused = self.state_identities()
        if path == self.root:  # where most commands start: no walk to make
            return fdwalk.enter_dir(self.root, (), refused=refused, on_refused=StateDirectoryError)
        root, parts = self._parts(path)
        return fdwalk.enter_dir(root, parts, refused=refused, on_refused=StateDirectoryError)

    def read_bytes(self, path: Path, *, limit: int | None = None) -> bytes:
        """Read a resolved regular file (at most ``limit + 1`` bytes when a limit is given)."""
        fd = self.open_regular(path)
        try:
            return fdwalk.read_fd(fd, limit)
        finally:
            os.close(fd)

    def write_bytes(
        self,
        path: Path,
        data: bytes,
        *,
        created_dirs: list[Path] | None = None,
        cancellable: bool = True,
        record: Recorder | None = None,
    ) -> None:
        """Atomically write a resolved path, creating missing parents (recorded in ``created_dirs``).

        Through the change journal: a change a killed process left half done is finished or undone first,
        and a write killed now leaves a record, so its temp file is removed by the next write or patch.
        ``record`` (the call's checkpoint recorder) is told what the file held before it is changed.
        """
        self.root_of(path)  # refuse a path outside every root before anything is written
        journal = Journal(self.state_dir, self.roots)
        journal.recover()
        journal.commit([Change(path, data)], cancellable=cancellable, created_dirs=created_dirs, record=record)

    def unlink(self, path: Path) -> None:
        """Remove a file's name (a hard link's other names and a symlink's target stay untouched)."""
        root, parts = self._parts(path)
        dir_fd = fdwalk.open_dir(root, parts[:-1])
        try:
            mode = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "path is a directory", str(path))
            os.unlink(parts[-1], dir_fd=dir_fd)
        finally:
            os.close(dir_fd)

    def rmdir(self, path: Path) -> None:
        root, parts = self._parts(path)
        dir_fd = fdwalk.open_dir(root, parts[:-1])
        try:
            os.rmdir(parts[-1], dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


def _expand_home(path: str) -> Path:
    """``~`` or ``~name`` expanded; a name that is no user's is an input error (``expanduser`` raises RuntimeError)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"'{path[:60]}' starts with '~' but names no user's home directory.",
            "Use a path relative to the workspace root.",
        ) from None


def _realpath(candidate: Path, spelled: str) -> Path:
    """Resolve every symlink; a loop is refused. Paths that do not exist yet (new files) resolve as far as they can."""
    try:
        return Path(os.path.realpath(candidate, strict=True))
    except FileNotFoundError:
        resolved = _lenient_realpath(candidate, spelled)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _denied(f"'{spelled}' leads into a symlink loop.", "Use the real path of the file.") from None
        resolved = _lenient_realpath(candidate, spelled)  # e.g. a file used as a directory: not found later
    # Non-strict realpath leaves a symlink in its result only where links loop.
    if any(os.path.islink(p) for p in (resolved, *resolved.parents)):
        raise _denied(f"'{spelled}' leads into a symlink loop.", "Use the real path of the file.")
    return resolved


def _lenient_realpath(candidate: Path, spelled: str) -> Path:
    """``realpath`` without ``strict``; a symlink swapped or removed mid-resolution is refused as a swap.

    (``realpath`` lstats a component, then reads the link: when the link changes between the two it raises
    EINVAL or ENOENT, which is a tree changing under the call, not a failure of toolrig.)
    """
    try:
        return Path(os.path.realpath(candidate))
    except OSError:
        raise fdwalk.swapped(spelled) from None


def _check_spelling(path: str) -> None:
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(ErrorType.INVALID_INPUT, "The path is not valid Unicode (it holds a lone surrogate).") from None
    if len(encoded) > MAX_PATH_CHARS:
        raise ToolError(ErrorType.INVALID_INPUT, f"The path is longer than {MAX_PATH_CHARS} bytes.")
    for part in path.split("/"):
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise ToolError(
                ErrorType.INVALID_INPUT, f"A path component is longer than {MAX_NAME_BYTES} bytes: '{part[:40]}…'."
            )
