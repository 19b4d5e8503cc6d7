"""Opening files and directories under a root one component at a time, never following a symlink.

Trust model: the path was resolved and checked a moment ago (``sandbox.paths``), but the tree can change
between that check and this use. Walking from the root with ``O_NOFOLLOW`` directory descriptors means a
symlink swapped in meanwhile makes the open fail (and the call is refused) instead of leading outside.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Container, Sequence
from pathlib import Path

from toolrig.errors import ErrorType, ToolError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ENTER_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def swapped(path: Path | str) -> ToolError:
    return ToolError(
        ErrorType.DENIED,
        f"'{path}' changed into a symlink (or stopped being a directory) while the call ran; nothing was done.",
        "Something else is changing the workspace. Check the path and retry once it is stable.",
    )


def not_regular(path: Path | str, mode: int) -> ToolError:
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device file"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a directory"
        if stat.S_ISDIR(mode)
        else "not a regular file"
    )
    return ToolError(ErrorType.DENIED, f"'{path}' is {kind}; only regular files can be read or written.")


def open_dir(
    root: Path,
    parts: Sequence[str],
    *,
    create: bool = False,
    created: list[Path] | None = None,
    on_link: Callable[[Path], ToolError] = swapped,
) -> int:
    """A descriptor for ``root/parts...``; with ``create``, missing directories are made (and recorded).

    ``on_link`` builds the error for a component that is a symlink (or not a directory): a swap during the
    call for the workspace, a committed symlink for toolrig's state directory.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    current = root
    try:
        for part in parts:
            current = current / part
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    if created is not None:
                        created.append(current)
                except FileExistsError:
                    pass
                next_fd = _open_dir_component(part, fd, current, on_link)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise on_link(current) from None
                raise
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def enter_dir(
    root: Path,
    parts: Sequence[str],
    *,
    refused: Container[tuple[int, int]] = (),
    on_refused: Callable[[Path], ToolError] = swapped,
    on_link: Callable[[Path], ToolError] = swapped,
) -> int:
    """A descriptor to start a process in (``fchdir``), never to read: ``O_PATH`` at every step, no symlink followed.

    Why ``O_PATH``: a shell can ``cd`` through and into a directory it may search (``x``) but not list (``r``);
    opening each step for reading refused those. Walking still needs search permission on every directory on the
    way (the kernel checks it for each step); the last one's is checked by ``fchdir`` itself. A component whose
    identity (``st_dev``, ``st_ino``) is in ``refused`` raises ``on_refused``: a directory is known by what it is,
    whatever name it has now.
    """
    fd = os.open(root, _ENTER_FLAGS & ~os.O_NOFOLLOW)  # the root is trusted as given
    current = root
    try:
        _refuse(fd, current, refused, on_refused)
        for part in parts:
            current = current / part
            try:
                next_fd = os.open(part, _ENTER_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise on_link(current) from None
                raise
            os.close(fd)
            fd = next_fd
            _refuse(fd, current, refused, on_refused)
        if not os.access(".", os.X_OK, dir_fd=fd):  # fchdir would fail later, and less clearly
            raise PermissionError(errno.EACCES, "Permission denied", str(current))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse(fd: int, path: Path, refused: Container[tuple[int, int]], on_refused: Callable[[Path], ToolError]) -> None:
    if refused:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) in refused:
            raise on_refused(path)


def _open_dir_component(part: str, fd: int, current: Path, on_link: Callable[[Path], ToolError]) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise on_link(current) from None
        raise


def open_regular(root: Path, parts: Sequence[str], *, on_link: Callable[[Path], ToolError] = swapped) -> int:
    """A read descriptor for a regular file; symlinks, FIFOs and devices are refused without blocking."""
    if not parts:
        raise not_regular(root, stat.S_IFDIR)
    dir_fd = open_dir(root, parts[:-1], on_link=on_link)
    try:
        try:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise on_link(root.joinpath(*parts)) from None
            raise
    finally:
        os.close(dir_fd)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise not_regular(root.joinpath(*parts), mode)
    return fd


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """Read a descriptor to its end, or to ``limit + 1`` bytes so a caller can tell the file is larger."""
    chunks: list[bytes] = []
    remaining = -1 if limit is None else limit + 1
    while remaining != 0:
        chunk = os.read(fd, 1 << 20 if remaining < 0 else min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        if remaining > 0:
            remaining -= len(chunk)
    return b"".join(chunks)
