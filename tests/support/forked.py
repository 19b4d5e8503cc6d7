"""Run a check in a forked child set up differently from the test process, and read back what it said."""

from __future__ import annotations

import os
from collections.abc import Callable


def in_child(prepare: Callable[[], None], work: Callable[[], str]) -> str:
    """``work()``'s answer from a child that first ran ``prepare()``; an exception there comes back as its text.

    The child never returns into pytest: whatever happens, it writes one answer and ends.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            prepare()
            said = work()
        except BaseException as exc:
            said = f"{type(exc).__name__}: {exc}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        said = handle.read().decode()
    os.waitpid(pid, 0)
    return said
