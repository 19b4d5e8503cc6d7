"""A session's lease in the state dir: a rewind never overlaps a run of the same session, in any process.

A run's next write would undo a rewind made under it (or the rewind would put back files the run is about to
change), and the run may be another process: ``toolrig run`` or ``chat`` in a terminal, a gateway or a worker on
the same workspace. So each session has two lock files under ``.toolrig/checkpoints/leases/``:

- ``NAME.run``: every root run of the session holds it shared for its length; a rewind takes it exclusive
  *without waiting*, and is refused when it cannot (a run is going). A run that starts while a rewind holds it
  waits for the rewind (a few file renames) to end, so it starts from the rewound files.
- ``NAME.rewind``: a rewind holds it exclusive for its length, so two rewinds of one session serialize.

These are ``flock`` locks: the kernel drops them when their descriptor closes, so a process killed with -9
leaves no stale lease, and they hold between two descriptors of one process too (a gateway rewinding while
its own run goes). The descriptors are close-on-exec: a command a run starts never inherits the lease.

Trust model: the lease files live in toolrig's own state, reached through ``StatePath`` (no symlink followed);
their content is never read.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.statedir import StatePath
from toolrig.stores.checkpoints.log import DIR_NAME, log_name

log = logging.getLogger(__name__)

LEASES = "leases"


def _open(state_dir: Path, session_id: str, kind: str) -> int:
    name = log_name(session_id).removesuffix(".jsonl") + f".{kind}"
    with StatePath.of(state_dir).child(DIR_NAME, LEASES).directory() as dir_fd:
        return os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)


def busy_message(session_id: str) -> str:
    return (
        f"A run of session {session_id} is going (in this or another process: toolrig run or chat, a gateway, "
        "a worker); a rewind under it would be undone by its next write, so nothing was changed."
    )


@contextlib.contextmanager
def rewind_lease(state_dir: Path, session_id: str) -> Iterator[None]:
    """Held for a rewind: waits for another rewind of the session, refuses (conflict) while a run of it goes."""
    try:
        serial = _open(state_dir, session_id, "rewind")
    except OSError as exc:
        raise ToolError(
            ErrorType.UNAVAILABLE, f"The session's lease could not be taken in the state dir ({exc.strerror or exc})."
        ) from None
    try:
        fcntl.flock(serial, fcntl.LOCK_EX)  # a rewind is a few renames: the next one waits for it
        runs = _open(state_dir, session_id, "run")  # the same directory as a moment ago
        try:
            try:
                fcntl.flock(runs, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ToolError(
                    ErrorType.CONFLICT,
                    busy_message(session_id),
                    "Wait for the run to end (or stop it), then rewind again.",
                ) from None
            yield
        finally:
            os.close(runs)
    finally:
        os.close(serial)


def run_is_going(state_dir: Path, session_id: str) -> bool:
    """Whether some process holds a run lease on the session now (a look, not a lease: it may change at once)."""
    try:
        fd = _open(state_dir, session_id, "run")
    except (OSError, ToolError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.asynccontextmanager
async def run_lease(state_dir: Path, session_id: str) -> AsyncIterator[None]:
    """Held by a root run for its length (shared: runs do not exclude each other, only rewinds).

    A state dir that cannot hold the lease (read-only, a planted link) leaves the run unleased rather than
    failing it: the run's checkpoints cannot be written there either, so there is nothing to rewind.
    """
    try:
        fd = _open(state_dir, session_id, "run")
    except (OSError, ToolError) as exc:
        log.debug("no run lease for session %s: %s", session_id, exc)
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # a rewind is going: wait for it in a thread, never on the event loop
            await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_SH)  # not cancellable: a brief wait
        yield
    finally:
        os.close(fd)
