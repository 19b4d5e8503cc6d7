"""How much the kernel takes as one program's arguments and environment, checked before a spawn.

A longer argument fails ``execve`` with E2BIG: from a model's call, that is input to shorten, not a service that
is down (``unavailable``) nor toolrig's own failure (``internal``), which is what it became where the spawn's
error surfaced. Every spawn of a model's words (a command, a search pattern, globs) asks here first.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

MAX_ARG = 32 * 4096  # MAX_ARG_STRLEN: one argument or "NAME=value" string, its NUL included
_POINTER = 8


def too_long(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """Why the kernel would refuse to start ``argv`` with ``env`` (in words), or None when it fits."""
    total = 0
    for arg in argv:
        size = len(os.fsencode(arg)) + 1
        if size > MAX_ARG:
            return f"one of its arguments is {size - 1:,} bytes, and Linux takes at most {MAX_ARG - 1:,} in one"
        total += size + _POINTER
    for name, value in (env or {}).items():
        size = len(os.fsencode(name)) + len(os.fsencode(value)) + 2
        if size > MAX_ARG:
            return f"the environment variable {name} is {size - 2:,} bytes, and Linux takes at most {MAX_ARG - 2:,}"
        total += size + _POINTER
    limit = os.sysconf("SC_ARG_MAX")  # a quarter of the stack limit, at least 128 KiB
    if total + 2 * _POINTER > limit:
        return f"its arguments and environment come to {total:,} bytes, and Linux takes at most {limit:,}"
    return None
