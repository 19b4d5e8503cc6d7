"""The launcher's board: which keepers are idle, in memory the launcher and its keepers share.

Part of the launcher (``launcher.py``, whose docstring says why a board and not messages); standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os

SLOTS = 4096  # keepers the board can hold at once; with every slot taken, a request waits for a keeper to be free
_TAKEN = SLOTS  # the board's 8-byte count of requests taken, after the slots (the launcher's death accounting)
_IDLE, _BUSY, _BACK = b"\x01", b"\x00", b"\x02"  # _BACK: done with a command, on its way back to the socket


class Board:
    """Which keepers are idle, shared by the launcher and its keepers (the module docstring says why)."""

    def __init__(self) -> None:
        self.memory = mmap.mmap(-1, SLOTS + 8)  # shared and anonymous: no descriptor a command could open
        self.lock = os.memfd_create("toolrig-board", os.MFD_CLOEXEC)
        self.free = list(range(SLOTS - 1, -1, -1))  # the launcher's own list, lowest slot last

    def claim(self) -> int | None:
        """A slot for a new keeper, marked idle (it is, as soon as it reads the socket), or None if all are used."""
        if not self.free:
            return None
        slot = self.free.pop()
        self.mark(slot, _IDLE)
        return slot

    def release(self, slot: int) -> bool:
        """Free a dead keeper's slot; whether the keeper was idle when it died."""
        was_idle = self.idle(slot)
        self.mark(slot, _BUSY)
        self.free.append(slot)
        return was_idle

    def mark(self, slot: int, state: bytes) -> None:
        self.memory[slot : slot + 1] = state

    def idle(self, slot: int) -> bool:
        return self.memory[slot] == 1

    def ready_soon(self, slot: int) -> bool:
        """Idle, or back from a command and about to read the socket: a keeper the next request can wait for."""
        return self.memory[slot] in (1, 2)

    def taken(self) -> int:
        return int.from_bytes(self.memory[_TAKEN : _TAKEN + 8], "little")

    def take(self, slot: int) -> bool:
        """Mark ``slot`` busy and count the request; whether another slot is still idle.

        Under a lock, so that two keepers taking requests at once cannot each see the other idle (the lock orders
        their marks and looks). The lock is only tried: contended, the answer is "none idle" (the launcher then
        looks at the board itself), never a wait that a command holding the lock could prolong.
        """
        try:
            fcntl.lockf(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.mark(slot, _BUSY)
            return False
        try:
            self.mark(slot, _BUSY)
            self.memory[_TAKEN : _TAKEN + 8] = ((self.taken() + 1) % (1 << 63)).to_bytes(8, "little")
            return self.memory.find(_IDLE, 0, SLOTS) >= 0 or self.memory.find(_BACK, 0, SLOTS) >= 0
        finally:
            with contextlib.suppress(OSError):
                fcntl.lockf(self.lock, fcntl.LOCK_UN)
