"""Modification times of the files a listing names, from ``lstat`` or from a cache that inotify keeps exact.

``glob`` orders its matches newest first, so it needs an mtime per match: an ``lstat`` each, which costs as
much CPU as ripgrep's whole walk. A workspace that is globbed again and again (an agent's session, an MCP
server) keeps the mtimes it has seen, and inotify on every directory that holds one (and on each of their
ancestors up to the root) tells it which to forget. Trust model: names come from ripgrep's listing relative to
the root; watches are added by path without following the last component, and a cached value is only ever an
``lstat`` this process made, so the cache can never show more than a fresh ``lstat`` would.

Why it is exact for changes made through the file-system API before the call (write, truncate, utimes,
chmod, rename over, delete, create, directory renames): the kernel queues the event before the change's
system call returns, a directory is watched before any file in it is ``lstat``-ed, and the queue is drained
before every batch is looked up. Whatever the cache cannot map exactly (queue overflow, a watched directory
moved or deleted, a directory renamed or deleted inside one, the root replaced, a hard link appearing) throws
the whole cache away. What inotify cannot see is never cached: files with more than one link, files on
another device than the root, roots on file systems whose changes may come from elsewhere (network, FUSE,
virtiofs). Known holes, stated in docs/performance.md: writes through a shared ``mmap`` (inotify reports
none), and a hard link made from an unwatched directory to a cached file and written through.

Each cache holds one inotify instance, a per-user resource: ``Caches`` keeps a process to a few of them.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from time import monotonic
from typing import Any

from toolrig.sandbox.inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_DONT_FOLLOW,
    IN_IGNORED,
    IN_ISDIR,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    Inotify,
)

# IN_CLOSE_WRITE: a write through a shared mmap changes the mtime with no event of its own; the close of a
# descriptor opened for writing after it is one.
_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
)  # fmt: skip
_FORGET_ALL = IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT
_DIRECTORY_GONE = IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE
_APPEARED = IN_CREATE | IN_MOVED_TO

# File systems whose every change goes through this kernel's VFS, so inotify sees it. Network and FUSE file
# systems (nfs, cifs, 9p, virtiofs, sshfs...) change behind the kernel's back: no cache there.
LOCAL_FILESYSTEMS = frozenset(
    ["ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "bcachefs", "jfs", "reiserfs", "nilfs2", "zfs", "overlay"]
)
MAX_WATCHES = 16_384  # directories per cache; past it, files in unwatched directories are lstat-ed every time
MAX_ENTRIES = 500_000  # cached mtimes per cache (about 100 bytes each)
MAX_CACHES = 4  # caches per process, each with one inotify instance (see Caches)
IDLE_SECONDS = 30.0  # with every place taken, a cache unused this long gives its place to another root


def lstat_mtimes(names: list[str], dir_fd: int) -> tuple[list[str], list[float]]:
    """The names that still exist and their mtimes, one ``lstat`` each (relative to ``dir_fd``)."""
    lstat = os.lstat
    try:  # one comprehension; a file gone since it was listed sends the batch the slow way
        return names, [lstat(name, dir_fd=dir_fd).st_mtime for name in names]
    except OSError:
        pass
    kept: list[str] = []
    mtimes: list[float] = []
    for name in names:
        try:
            mtimes.append(lstat(name, dir_fd=dir_fd).st_mtime)
        except OSError:
            continue
        kept.append(name)
    return kept, mtimes


def filesystem_type(path: Path) -> str:
    """The type of the file system ``path`` is on (the longest mount point above it), "" if unknown."""
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields, _, rest = line.partition(" - ")
                parts = fields.split(" ")
                if len(parts) < 5 or not rest:
                    continue
                point = parts[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
                point = point.replace("\\134", "\\")
                inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, rest.split(" ", 1)[0]
    except OSError:
        return ""
    return kind


class MtimeCache:
    """The mtimes of files below one root, exact for every change inotify reports (see the module docstring).

    ``stamp`` is safe to call from several threads: a lock covers each batch's drain, lookups and fills, so an
    event drained by one call can never be overtaken by a stale value another call is about to store.
    """

    def __init__(self, root: Path, *, max_watches: int = MAX_WATCHES, max_entries: int = MAX_ENTRIES) -> None:
        self.root = root
        self.max_watches = max_watches
        self.max_entries = max_entries
        self.usable = filesystem_type(root) in LOCAL_FILESYSTEMS
        self.forgotten = 0  # how many times the whole cache was thrown away (tests and diagnostics read it)
        self._lock = threading.Lock()
        self._inotify: Inotify | None = None
        self._identity = (0, 0)  # the watched root's (st_dev, st_ino)
        self._dirs: dict[str, int] = {}  # directory relative to the root ("" = the root) -> watch descriptor
        self._paths: dict[int, str] = {}  # watch descriptor -> directory
        self._mtimes: dict[str, float] = {}
        self._full = False  # the watch limit was reached: no more directories are watched
        self._stale = False  # a watch turned out to alias another: forget everything before the next use

    def __len__(self) -> int:
        return len(self._mtimes)

    def stamp(self, names: list[str], dir_fd: int) -> tuple[list[str], list[float]]:
        """Like ``lstat_mtimes(names, dir_fd)`` (``dir_fd`` is the root), with the mtimes known kept."""
        with self._lock:
            if not self._ready():
                return lstat_mtimes(names, dir_fd)
            try:  # map: the loop runs in C (a few percent less than a comprehension)
                return names, list(map(self._mtimes.__getitem__, names))
            except KeyError:
                return self._fill(names, dir_fd)

    def close(self) -> None:
        with self._lock:
            self._forget()
            self.usable = False

    # ------------------------------------------------------------------------------ keeping it exact

    def _ready(self) -> bool:
        """Watching, with every change queued so far applied; False: answer this batch with lstat."""
        if not self.usable:
            return False
        try:
            current = os.stat(self.root)
        except OSError:
            self._forget()
            return False
        if self._stale or (self._inotify is not None and (current.st_dev, current.st_ino) != self._identity):
            self._forget()  # the root path now names another directory (it, or a directory above it, was moved)
        if self._inotify is not None and self._drain(self._inotify):
            return True
        return self._start(current)

    def _start(self, before: os.stat_result) -> bool:
        inotify = Inotify()
        if not inotify.active:
            return False  # no inotify here, or no instance left: lstat this batch, try again at the next
        try:
            wd = inotify.add_watch(self.root, _MASK)
            after = os.stat(self.root)
        except OSError:
            inotify.close()
            return False
        if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
            inotify.close()  # replaced while the watch was added: which one is watched is unknown
            return False
        self._inotify = inotify
        self._identity = (after.st_dev, after.st_ino)
        self._dirs = {"": wd}
        self._paths = {wd: ""}
        return True

    def _forget(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self.forgotten += 1
        self._inotify = None
        self._dirs = {}
        self._paths = {}
        self._mtimes = {}
        self._full = False
        self._stale = False

    def _drain(self, inotify: Inotify) -> bool:
        """Apply every queued event; False if that threw the whole cache away."""
        events = inotify.read()
        if not events:
            return True
        mtimes = self._mtimes
        appeared: list[str] = []
        for wd, mask, _cookie, name in events:
            directory = self._paths.get(wd)
            if mask & _FORGET_ALL or directory is None:
                self._forget()  # overflow, or a watched directory gone or moved: nothing maps exactly any more
                return False
            if mask & IN_ISDIR:
                if mask & _DIRECTORY_GONE:
                    self._forget()  # a directory moved or deleted under a watched one: its files' names changed
                    return False
                continue  # a new directory: its files are not cached yet, they get watched before their lstat
            if not name:
                continue
            path = f"{directory}/{name}" if directory else name
            mtimes.pop(path, None)
            if mask & _APPEARED:
                appeared.append(path)
        for path in appeared:
            # link(2) tells only the new name's directory: a second name for a cached file would let writes
            # through it go unseen. A file gone again by now is left to the module docstring's stated hole.
            try:
                info = os.lstat(self.root / path)
            except OSError:
                continue
            if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                self._forget()
                return False
        return True

    def _watch(self, directory: str) -> bool:
        """Watch ``directory`` and each directory above it up to the root; False if one cannot be watched."""
        if directory in self._dirs:
            return True
        if self._full or self._inotify is None:
            return False
        parent = directory.rpartition("/")[0]
        if not self._watch(parent):
            return False
        if len(self._dirs) >= self.max_watches:
            self._full = True
            return False
        try:
            wd = self._inotify.add_watch(self.root / directory, _MASK)
        except OSError as error:
            if error.errno == errno.ENOSPC:
                self._full = True  # the user's watch limit: keep what is watched, lstat the rest
            return False
        if wd in self._paths and self._paths[wd] != directory:
            self._stale = True  # the same directory under two names: one of them was just renamed
            return False
        self._dirs[directory] = wd
        self._paths[wd] = directory
        return True

    def _fill(self, names: list[str], dir_fd: int) -> tuple[list[str], list[float]]:
        mtimes = self._mtimes
        missing = [name for name in names if name not in mtimes]
        parents = [name.rpartition("/")[0] for name in missing]
        # Directories are watched before their files are lstat-ed: a change after the lstat is an event, not lost.
        watched = {parent: self._watch(parent) for parent in dict.fromkeys(parents)}
        lstat = os.lstat
        try:
            infos = [lstat(name, dir_fd=dir_fd) for name in missing]
            gone = False
        except OSError:  # a file gone since it was listed: the slow way, one by one
            infos, gone, found, found_parents = [], True, [], []
            for name, parent in zip(missing, parents, strict=True):
                try:
                    infos.append(lstat(name, dir_fd=dir_fd))
                except OSError:
                    continue
                found.append(name)
                found_parents.append(parent)
            missing, parents = found, found_parents
        fresh = {name: info.st_mtime for name, info in zip(missing, infos, strict=True)}
        device = self._identity[0]
        keep = [
            name
            for name, parent, info in zip(missing, parents, infos, strict=True)
            if info.st_nlink == 1 and info.st_dev == device and watched[parent]
        ]
        room = max(self.max_entries - len(mtimes), 0)
        mtimes.update((name, fresh[name]) for name in keep[:room])
        if gone:
            names = [name for name in names if name in mtimes or name in fresh]
        get = mtimes.get
        return names, [mtime if (mtime := get(name)) is not None else fresh[name] for name in names]


def instance_share(limit_file: Path = Path("/proc/sys/fs/inotify/max_user_instances")) -> int:
    """How many caches one process may hold: ``MAX_CACHES``, and never more than 1/32 of the user's instances."""
    try:
        return min(MAX_CACHES, int(limit_file.read_text()) // 32)
    except (OSError, ValueError):
        return MAX_CACHES


class Caches:
    """Which roots of which workspaces hold an ``MtimeCache``: from a root's second listing on, ``limit`` at most.

    Each cache holds an inotify instance, and the user's instances (``max_user_instances``, 128 on these
    machines) are shared with the memory store's watch and every other program of the user: a process serving
    many workspaces (an MCP server with many roots, an agent host, a test suite) must not take them all. When
    every place is taken, the least recently used cache gives its place up if it has been idle for
    ``idle_seconds`` (closed; its root starts over as never listed); otherwise the new root goes without (one
    ``lstat`` per match, exact), so two busy workspaces never take turns rebuilding each other's cache.
    ``release`` closes an owner's caches at once (``Rig.close``); an owner garbage-collected frees them too.
    """

    def __init__(
        self, limit: int | None = None, *, idle_seconds: float = IDLE_SECONDS, clock: Callable[[], float] = monotonic
    ) -> None:
        self.limit = instance_share() if limit is None else limit
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._lock = threading.Lock()
        # owner -> root -> its cache (None: listed once, or its cache was given up)
        self._owners: weakref.WeakKeyDictionary[object, dict[Path, MtimeCache | None]] = weakref.WeakKeyDictionary()
        # the caches made, weakly (an owner collected frees its caches): cache -> [last use, owner, root]
        self._live: weakref.WeakKeyDictionary[MtimeCache, list[Any]] = weakref.WeakKeyDictionary()

    def cache_for(self, owner: object, root: Path) -> MtimeCache | None:
        """The cache of ``owner``'s (a workspace's) ``root``, or None: on its first listing, or with no place free.

        A one-shot call pays nothing (no inotify instance, no watches); a workspace that lists twice is likely
        to list again, and pays the watches once.
        """
        with self._lock:
            roots = self._owners.setdefault(owner, {})
            if root not in roots:
                roots[root] = None
                return None
            now = self._clock()
            found = roots[root]
            if found is not None:
                self._live[found][0] = now
                return found
            if len(self._live) >= self.limit and not self._give_up_one(now):
                return None
            found = roots[root] = MtimeCache(root)
            self._live[found] = [now, weakref.ref(owner), root]
            return found

    def held(self, owner: object) -> dict[Path, MtimeCache | None]:
        """``owner``'s roots and their caches (what tests and diagnostics look at)."""
        with self._lock:
            return dict(self._owners.get(owner, {}))

    def __len__(self) -> int:
        return len(self._live)

    def release(self, owner: object) -> None:
        """Close ``owner``'s caches now; its next listing starts over (first listing: no cache)."""
        with self._lock:
            roots = self._owners.pop(owner, {})
            for cache in roots.values():
                if cache is not None:
                    self._live.pop(cache, None)
        for cache in roots.values():
            if cache is not None:
                cache.close()

    def close_all(self) -> None:
        with self._lock:
            caches = list(self._live)
            self._live.clear()
            self._owners.clear()
        for cache in caches:
            cache.close()

    def _give_up_one(self, now: float) -> bool:
        """Close the least recently used cache if it has been idle long enough; False if none may go."""
        if not self._live:
            return False
        cache, (used, owner, root) = min(self._live.items(), key=lambda item: item[1][0])
        if now - used < self.idle_seconds:
            return False
        del self._live[cache]
        holder = owner()
        roots = self._owners.get(holder) if holder is not None else None
        if roots is not None and roots.get(root) is cache:
            roots[root] = None
        cache.close()  # its lock: a listing that holds it right now finishes first, then lstat-s (it is closed)
        return True


CACHES = Caches()


def cache_for(owner: object, root: Path) -> MtimeCache | None:
    """``CACHES.cache_for``: the process's caches, ``MAX_CACHES`` at most."""
    return CACHES.cache_for(owner, root)


def release(owner: object) -> None:
    """Close ``owner``'s caches now (a Rig closing its workspace)."""
    CACHES.release(owner)
