"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Trust model: the caller has already resolved and authorised ``path`` (see ``sandbox.paths``). Given the
``root`` it was checked against, the parent is reopened from that root without following symlinks, so a
directory swapped for a symlink meanwhile is refused. No write commits once the tool call was cancelled.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from toolrig.cancel import check_cancelled
from toolrig.sandbox.fdwalk import not_regular, open_dir


def _umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before threads exist.
    mask = os.umask(0)
    os.umask(mask)
    return mask


_DEFAULT_MODE = 0o666 & ~_umask()
TMP_SUFFIX = ".toolrig-tmp"


def atomic_write_bytes(
    path: Path,
    data: bytes,
    *,
    root: Path | None = None,
    make_parents: bool = False,
    created_dirs: list[Path] | None = None,
    cancellable: bool = True,
) -> None:
    """Write ``data`` to ``path`` through a temp file in the same directory, fsync and ``os.replace``.

    The file's permission bits are preserved when it exists. If the tool call was cancelled (timeout,
    abort) before the replace, nothing is changed and the call's cancellation error is raised; a rollback
    passes ``cancellable=False`` because restoring what was there is always wanted.
    ``created_dirs`` collects the directories ``make_parents`` had to create, so they can be removed again.
    """
    if cancellable:
        check_cancelled()
    if root is not None:
        parts = path.relative_to(root).parts
        dir_fd = open_dir(root, parts[:-1], create=make_parents, created=created_dirs)
    else:
        if make_parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    name = path.name
    try:
        tmp_name = temp_name(name, secrets.token_hex(4))
        stage(dir_fd, name, path, tmp_name, data)
        try:
            if cancellable:
                check_cancelled()
            os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name, dir_fd=dir_fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def temp_name(name: str, tag: str) -> str:
    """The name of the temp file that will replace ``name`` in the same directory (a dot file, tagged)."""
    return f".{name[:200]}.{tag}{TMP_SUFFIX}"


def stage(dir_fd: int, name: str, path: Path, tmp_name: str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to a new ``tmp_name`` beside ``name`` with ``name``'s permission bits, and fsync it.

    Renaming it over ``name`` afterwards is the atomic step; a failed write removes the temp file. ``mode``
    (a rewind putting a file back as it was) wins over the current file's bits.
    """
    wanted = mode
    try:
        current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISREG(current.st_mode):
            mode = stat.S_IMODE(current.st_mode)
        elif stat.S_ISLNK(current.st_mode):
            mode = _DEFAULT_MODE  # a symlink swapped in is replaced, never written through
        else:
            raise not_regular(path, current.st_mode)
    except FileNotFoundError:
        mode = _DEFAULT_MODE
    if wanted is not None:
        mode = wanted & 0o7777
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp_name, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name, dir_fd=dir_fd)
        raise


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    # newline="" semantics: the text is written exactly as given, line endings included.
    atomic_write_bytes(path, text.encode(encoding))


def fsync_directory(directory: Path) -> None:
    """Make a rename durable: without this a crash can forget the new directory entry."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
