"""Linux inotify through libc (the standard library has no binding): one instance, its watches, its events.

Trust model: watches are added by path with ``IN_DONT_FOLLOW | IN_ONLYDIR`` by the callers that need it;
event names come from the kernel and are only ever joined to the directory the caller watched.
The kernel queues an event synchronously with the change that caused it, so after a change returns, a
non-blocking read of the instance sees it: that is what makes a cache drained before each use exact.
"""

from __future__ import annotations

import os
import struct
import sys
import weakref
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

_HEADER = struct.Struct("iIII")


@cache
def libc() -> ctypes.CDLL | None:
    """The C library with both inotify calls, or None where there is no inotify (not Linux, no symbol)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here, not at import: ctypes costs ~7 ms, paid only once an instance is made
    import ctypes.util

    try:
        found = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        found.inotify_init1, found.inotify_add_watch, found.inotify_rm_watch  # noqa: B018 - all must exist
    except (OSError, AttributeError):
        return None
    return found


class Inotify:
    """One non-blocking inotify instance. ``fd`` is -1 when none could be made (no inotify, instance limit)."""

    def __init__(self) -> None:
        self._libc = libc()
        self.fd = -1
        self._finalizer: weakref.finalize[[int], Inotify] | None = None
        if self._libc is not None:
            fd = int(self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
            if fd >= 0:
                self.fd = fd
                self._finalizer = weakref.finalize(self, os.close, fd)  # an instance dropped unclosed frees its fd

    @property
    def active(self) -> bool:
        return self.fd >= 0

    def add_watch(self, path: str | os.PathLike[str], mask: int) -> int:
        """The watch descriptor for ``path`` (the same one again for a directory already watched).

        Raises OSError with the kernel's errno: ENOSPC when the user's watch limit is reached.
        """
        if self._libc is None or self.fd < 0:
            raise OSError(0, "inotify is not available")
        wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask))
        if wd < 0:
            import ctypes  # already loaded by libc()

            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), os.fspath(path))
        return wd

    def rm_watch(self, wd: int) -> None:
        if self._libc is not None and self.fd >= 0:
            self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[tuple[int, int, int, str]]:
        """Every queued event as (wd, mask, cookie, name), without blocking; [] when none is queued."""
        events: list[tuple[int, int, int, str]] = []
        if self.fd < 0:
            return events
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, cookie, length = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + length]
                events.append((wd, mask, cookie, os.fsdecode(raw.rstrip(b"\x00"))))
                offset += _HEADER.size + length

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self.fd = -1
