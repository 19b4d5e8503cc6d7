"""Multi-file changes that survive ``kill -9``: after recovery the tree is wholly before or wholly after.

A change set is written as a record under the workspace's state directory first, naming every temp file it
will create; then every new version is staged beside its target and fsynced; then the record is renamed
from ``.prepare`` to ``.commit`` (the commit point) and the temps are renamed over their targets. Recovery
(before the next patch) deletes the temps of a record that never committed and finishes one that did, so a
killed change is rolled back or forward, and no ``*.toolrig-tmp`` file of a dead writer stays behind.

Trust model: records live in toolrig's own state (no tool may touch it), but a hostile repository could ship
one, so recovery acts only on paths inside the workspace roots, on temps named as this module names them,
and only through directory descriptors that follow no symlink. A writer holds a lock on its record while it
works, so a live writer's record is never recovered by another process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolrig.cancel import check_cancelled
from toolrig.sandbox.atomic import TMP_SUFFIX, stage, temp_name
from toolrig.sandbox.fdwalk import open_dir

JOURNAL_DIR_NAME = "journal"
_PREPARE, _COMMIT = ".prepare", ".commit"


@dataclass(frozen=True, slots=True)
class Change:
    """One file's new content; ``data=None`` removes the file. ``mode``: permission bits to give it (else kept)."""

    path: Path
    data: bytes | None
    mode: int | None = None


Recorder = Callable[[Sequence[Change]], None]
"""Told of a change set before anything of it is written (checkpoints: what each file held before)."""


class PartialCommit(OSError):
    """A rename failed after the commit point; ``done`` were changed, the rest were not (temps removed)."""

    def __init__(self, error: OSError, done: list[Path], created: list[Path]) -> None:
        super().__init__(error.errno, error.strerror, error.filename)
        self.done = done
        self.created = created  # directories the change made, outermost first


def _is_within(path: Path, root: Path) -> bool:
    inner, outer = str(path), str(root)
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


class Journal:
    """The change journal of one workspace: ``state_dir/journal/<id>.prepare|.commit`` records."""

    def __init__(self, state_dir: Path, roots: Sequence[Path]) -> None:
        self.state_dir = state_dir
        self.directory = state_dir / JOURNAL_DIR_NAME
        self.roots = tuple(roots)

    def _root_of(self, path: Path) -> Path | None:
        found = [root for root in self.roots if _is_within(path, root) and path != root]
        if not found or _is_within(path, self.state_dir):
            return None
        return max(found, key=lambda r: len(r.parts))

    def _parts(self, path: Path) -> tuple[Path, tuple[str, ...]]:
        root = self._root_of(path)
        if root is None:
            raise ValueError(f"{path} is outside the workspace")
        return root, path.relative_to(root).parts

    # ------------------------------------------------------------------------------ writing

    def commit(
        self,
        changes: Sequence[Change],
        *,
        cancellable: bool = True,
        created_dirs: list[Path] | None = None,
        record: Recorder | None = None,
    ) -> None:
        """Apply ``changes`` all or nothing, even if the process dies at any point.

        An error before the commit point changes nothing (temps and new directories are removed); a
        rename failing after it raises ``PartialCommit`` naming what was changed, for the caller to restore.
        A single change needs no commit point (its rename is atomic), only the record naming its temp file.
        ``created_dirs`` collects the directories made for new files, so a caller can remove them again.
        ``record`` is called with the changes before any of them is staged (a failure there changes nothing).
        """
        if cancellable:
            check_cancelled()
        if record is not None:
            record(changes)
        tx = secrets.token_hex(8)
        entries = [
            {"path": str(c.path), "temp": None if c.data is None else temp_name(c.path.name, tx)} for c in changes
        ]
        dirs = self._missing_dirs([c.path for c in changes if c.data is not None])
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        record_path = self.directory / f"{tx}{_PREPARE}"
        fd = os.open(record_path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps({"tx": tx, "entries": entries, "dirs": [str(d) for d in dirs]}).encode())
            try:
                for change, entry in zip(changes, entries, strict=True):
                    if change.data is not None:
                        self._stage(change.path, str(entry["temp"]), change.data, change.mode)
                if cancellable:
                    check_cancelled()
                if len(changes) > 1:  # one rename is atomic alone: no commit point needed
                    os.fsync(fd)
                    committed = self.directory / f"{tx}{_COMMIT}"
                    os.rename(record_path, committed)
                    record_path = committed
                    _fsync_dir(self.directory)
            except BaseException:
                self._roll_back(entries, [str(d) for d in dirs])
                os.unlink(record_path)
                raise
            done: list[Path] = []
            try:
                for entry in entries:
                    self._finish(entry)
                    done.append(Path(str(entry["path"])))
            except OSError as exc:
                self._roll_back(entries, [])
                os.unlink(record_path)
                raise PartialCommit(exc, done, dirs) from None
            os.unlink(record_path)
            if created_dirs is not None:
                created_dirs.extend(dirs)
        finally:
            os.close(fd)

    def _missing_dirs(self, paths: list[Path]) -> list[Path]:
        """Parents that do not exist yet, outermost first: a rollback removes them again."""
        missing: dict[Path, None] = {}
        for path in paths:
            root = self._root_of(path)
            chain = []
            parent = path.parent
            while root is not None and parent != root and _is_within(parent, root) and not parent.is_dir():
                chain.append(parent)
                parent = parent.parent
            missing.update(dict.fromkeys(reversed(chain)))
        return list(missing)

    def _stage(self, path: Path, temp: str, data: bytes, mode: int | None) -> None:
        root, parts = self._parts(path)
        dir_fd = open_dir(root, parts[:-1], create=True)
        try:
            stage(dir_fd, parts[-1], path, temp, data, mode)
        finally:
            os.close(dir_fd)

    def _finish(self, entry: dict[str, str | None]) -> None:
        """Put one entry in place: rename its temp over the target, or remove the target. Idempotent."""
        root, parts = self._parts(Path(str(entry["path"])))
        try:
            dir_fd = open_dir(root, parts[:-1])
        except FileNotFoundError:
            return  # a removal whose directory is gone: nothing to remove
        try:
            temp = entry["temp"]
            if temp is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(parts[-1], dir_fd=dir_fd)
            else:
                with contextlib.suppress(FileNotFoundError):  # already renamed before a crash
                    os.rename(temp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _roll_back(self, entries: list[dict[str, str | None]], dirs: list[str]) -> None:
        """Remove every temp still there and every directory the change created (if empty)."""
        for entry in entries:
            temp = entry["temp"]
            if temp is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                root, parts = self._parts(Path(str(entry["path"])))
                dir_fd = open_dir(root, parts[:-1])
                try:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(temp, dir_fd=dir_fd)
                finally:
                    os.close(dir_fd)
        for directory in reversed(dirs):
            with contextlib.suppress(OSError, ValueError):
                root, parts = self._parts(Path(directory))
                parent_fd = open_dir(root, parts[:-1])
                try:
                    os.rmdir(parts[-1], dir_fd=parent_fd)
                finally:
                    os.close(parent_fd)

    # ------------------------------------------------------------------------------ recovery

    def recover(self) -> list[str]:
        """Roll back or forward every change whose writer died; returns one line per record handled."""
        try:
            names = sorted(os.listdir(self.directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        report = []
        for name in names:
            if name.endswith((_PREPARE, _COMMIT)) and (outcome := self._recover_one(name)):
                report.append(outcome)
        return report

    def _recover_one(self, name: str) -> str | None:
        path = self.directory / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # its writer is alive
            info = os.fstat(fd)
            try:
                if os.stat(path, follow_symlinks=False).st_ino != info.st_ino:
                    return None  # finished and replaced meanwhile
            except FileNotFoundError:
                return None
            if info.st_uid != os.geteuid() or info.st_mode & 0o077:
                return None  # not written by us (git checks files out 0644): never act on it
            entries, dirs = self._read(fd, name)
            if name.endswith(_COMMIT):
                for entry in entries:
                    with contextlib.suppress(OSError, ValueError):
                        self._finish(entry)
                outcome = f"finished an interrupted change of {len(entries)} file(s)"
            else:
                self._roll_back(entries, dirs)
                outcome = f"rolled back an interrupted change of {len(entries)} file(s)"
            os.unlink(path)
            return outcome
        finally:
            os.close(fd)

    def _read(self, fd: int, name: str) -> tuple[list[dict[str, str | None]], list[str]]:
        """The record's entries that name a path inside the workspace and a temp named as ours are."""
        chunks = []
        while block := os.read(fd, 1 << 16):
            chunks.append(block)
        try:
            record = json.loads(b"".join(chunks))
            tx = str(record["tx"])
            raw_entries, raw_dirs = list(record["entries"]), list(record["dirs"])
        except (ValueError, KeyError, TypeError):
            return [], []  # a prepare record cut short: no temp was created yet
        if not name.startswith(tx):
            return [], []
        entries: list[dict[str, str | None]] = []
        for entry in raw_entries:
            if not isinstance(entry, dict):
                continue
            target, temp = entry.get("path"), entry.get("temp")
            if not isinstance(target, str) or not os.path.isabs(target) or os.path.normpath(target) != target:
                continue
            if self._root_of(Path(target)) is None:
                continue
            if temp is not None and (not isinstance(temp, str) or temp != temp_name(Path(target).name, tx)):
                continue
            entries.append({"path": target, "temp": temp})
        dirs = [
            d
            for d in raw_dirs
            if isinstance(d, str) and os.path.isabs(d) and os.path.normpath(d) == d and self._root_of(Path(d))
        ]
        return entries, dirs


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["TMP_SUFFIX", "Change", "Journal", "PartialCommit", "Recorder"]
