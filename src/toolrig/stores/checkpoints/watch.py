"""A cheap, bounded look at the workspace before and after a command: which files it changed.

Commands can change anything their view lets them write; their changes are not kept, only found, so a rewind
can say which files it cannot put back. The look is one ``lstat`` per entry (name, size, mtime, inode, mode)
over at most ``MAX_ENTRIES`` entries, skipping ``.git``, toolrig's state and the deny globs; past the bound
the result says it is incomplete rather than pretend.

Trust model: only names and stat results of the workspace's own roots are read; nothing is opened.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from toolrig.sandbox.paths import GIT_DIR_NAME, Workspace
from toolrig.stores.checkpoints.log import Recorder

MAX_ENTRIES = 10_000  # ~14 µs an entry measured under load: ~0.15 s at the bound, twice per command
MAX_REPORTED = 200

Snapshot = dict[str, tuple[int, int, int, int]]


@dataclass(frozen=True, slots=True)
class Look:
    entries: Snapshot
    complete: bool


def look(workspace: Workspace, limit: int = MAX_ENTRIES) -> Look:
    """Every file's (size, mtime_ns, inode, mode) under the roots, by path, up to ``limit`` entries."""
    found: Snapshot = {}
    stack = [str(root) for root in workspace.roots]
    seen = 0
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                for entry in listing:
                    seen += 1
                    if seen > limit:
                        return Look(found, complete=False)
                    _take(workspace, entry, found, stack)
        except OSError:
            continue
    return Look(found, complete=True)


def _take(workspace: Workspace, entry: os.DirEntry[str], found: Snapshot, stack: list[str]) -> None:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode):
        if entry.name != GIT_DIR_NAME and not workspace.hidden(Path(entry.path), is_dir=True):
            stack.append(entry.path)
        return
    found[entry.path] = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)


def changed(workspace: Workspace, before: Look, after: Look) -> tuple[list[str], bool]:
    """Files made, removed or changed between two looks (shown relative), at most ``MAX_REPORTED``; complete?"""
    old, new = before.entries, after.entries
    paths = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p) and not workspace.hidden(Path(p)))
    complete = before.complete and after.complete and len(paths) <= MAX_REPORTED
    return [workspace.display(Path(p)) for p in paths[:MAX_REPORTED]], complete


class CommandWatch:
    """The look before a command and, after it, the changes recorded against the call's checkpoint."""

    def __init__(self, workspace: Workspace, recorder: Recorder) -> None:
        self.workspace, self.recorder = workspace, recorder
        self.before: Look | None = None

    @classmethod
    async def start(cls, workspace: Workspace, recorder: Recorder | None) -> CommandWatch | None:
        """None when the call records no checkpoints (no agent run): then nothing is looked at."""
        if recorder is None:
            return None
        watch = cls(workspace, recorder)
        watch.before = await anyio.to_thread.run_sync(look, workspace)
        return watch

    async def finish(self) -> None:
        if self.before is None:
            return
        after = await anyio.to_thread.run_sync(look, self.workspace)
        paths, complete = changed(self.workspace, self.before, after)
        if paths or not complete:
            await anyio.to_thread.run_sync(self.recorder.commands_changed, paths, complete)


@contextlib.asynccontextmanager
async def watched(workspace: Workspace, recorder: Recorder | None) -> AsyncIterator[None]:
    """A look when a command starts and when it ends, however it ends (a background one: stopped, its run over).

    The recorder carries the mark of the call that started the command, so what a background command changes
    while later turns run lands in the turn that started it. The closing look is shielded: a stopped command's
    task is being cancelled, and its changes are still to be found.
    """
    watch = await CommandWatch.start(workspace, recorder)
    try:
        yield
    finally:
        if watch is not None:
            with anyio.CancelScope(shield=True):
                await watch.finish()
