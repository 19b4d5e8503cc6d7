"""Inotify instances in tests: how many this process holds, and a stretch of time with none left to take.

The instance limit (``max_user_instances``, 128 here) is per user, shared with every other process of the
user: ``no_instance_left`` takes what is left only for the ``with`` block and frees it in a ``finally``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from toolrig.sandbox.inotify import Inotify


def instances_held() -> int:
    """The inotify instances this process has open (descriptors on ``anon_inode:inotify``)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify"
        except OSError:
            continue  # the descriptor listdir itself used, closed by now
    return count


@contextmanager
def no_instance_left(cap: int = 100_000) -> Iterator[list[Inotify]]:
    """Every inotify instance the user may still make, held by this block (EMFILE for anyone else meanwhile)."""
    taken: list[Inotify] = []
    try:
        while len(taken) < cap:
            instance = Inotify()
            if not instance.active:
                break
            taken.append(instance)
        assert not Inotify().active, "the instance limit was not reached"
        yield taken
    finally:
        for instance in taken:
            instance.close()
