"""The private temp directory of one session's commands, seen at ``/tmp`` inside the sandbox.

Made under the system temp directory, in a directory of our own (mode 0700, owned by us, not a symlink: the
system temp directory is shared, and another user could have made the name first), one per workspace and session
so sessions see nothing of each other's temp files.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile


class TempDirError(OSError):
    """The per-user directory is not ours (made by someone else first, or a symlink)."""


def session_tmp(root: str, session: str) -> str:
    base = os.path.join(tempfile.gettempdir(), f"toolrig-{os.getuid()}")
    _own_dir(base)
    name = hashlib.sha256(f"{root}\0{session}".encode()).hexdigest()[:24]
    path = os.path.join(base, name)
    _own_dir(path)
    return path


def is_session_base(path: str) -> bool:
    """Whether ``path`` is the per-user directory ``session_tmp`` makes every session's temp dir in."""
    return os.path.basename(path) == f"toolrig-{os.getuid()}"


def _own_dir(path: str) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise TempDirError(f"{path} is not a private directory of this user (made by someone else, or a symlink)")
