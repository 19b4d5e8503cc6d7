"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Trust model: the caller has already resolved and authorised ``path`` (see ``sandbox.paths``); this module
only makes the write crash-safe and refuses to commit once the current tool call was cancelled.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from toolrig.cancel import check_cancelled


def _umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before threads exist.
    mask = os.umask(0)
    os.umask(mask)
    return mask


_DEFAULT_MODE = 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same directory, fsync and ``os.replace``.

    The file's permission bits are preserved when it exists. If the tool call was cancelled (timeout,
    abort) before the replace, nothing is changed and the call's cancellation error is raised.
    """
    directory = path.parent
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = _DEFAULT_MODE
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".toolrig-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        check_cancelled()
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_directory(directory)


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
