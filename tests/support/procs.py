"""Processes found in /proc by a token in their command line: what tests of leftover processes look for."""

from __future__ import annotations

import os
import secrets


def token() -> str:
    """A sleep length no other process on the machine uses: its processes are found by it in /proc."""
    return f"7{secrets.randbelow(10**8):08d}"


def alive(token: str) -> list[int]:
    """Live processes whose command line holds ``token`` (the sandbox, the shell and the command itself)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in argv and state != b"Z":
            found.append(int(entry))
    return found
