"""Apply Landlock rules, then exec the command: ``python -I -S _shim.py SPEC_FILE -- ARGV...`` (stdlib only).

SPEC_FILE holds JSON (removed once read): ``read`` (paths granted read and execute), ``write`` (granted every
write right), ``abi``. A path that cannot be opened is skipped (it grants nothing). Any failure to confine ends
the shim with 126 before the command runs: a command never runs less confined than its result will say.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

_CREATE, _ADD, _RESTRICT = 444, 445, 446
_EXECUTE, _WRITE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_ALL_V1 = (1 << 13) - 1
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_FILE_RIGHTS = _EXECUTE | _WRITE | _READ_FILE | _TRUNCATE  # the only rights a rule on a file may carry


class _Attr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _ScopedAttr(ctypes.Structure):
    """ABI 6: scopes, so a command signals no process outside its domain and reaches no abstract socket.

    Outside its domain: toolrig and other sessions' commands (``kill -9``); X11, D-Bus session buses, containerd.
    """

    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2


class _Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def main(spec: dict[str, object], argv: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    abi = int(spec.get("abi", 1))  # type: ignore[call-overload]
    handled = _ALL_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr: ctypes.Structure = (
        _ScopedAttr(handled, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else _Attr(handled)
    )
    ruleset = libc.syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    reading = _EXECUTE | _READ_FILE | _READ_DIR
    for key, access in (("read", reading), ("write", handled)):
        for path in spec.get(key, []):  # type: ignore[attr-defined]
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            allowed = access if os.path.isdir(path) else access & _FILE_RIGHTS
            rule = _Beneath(allowed & handled, fd)
            if libc.syscall(_ADD, ruleset, 1, ctypes.byref(rule), 0) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(_RESTRICT, ruleset, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.execvp(argv[0], argv)  # noqa: S606 - the command, now confined


def _spec(path: str) -> dict[str, object]:
    """The rules toolrig wrote for this command (read once, then removed)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return dict(json.load(handle))
    finally:
        os.unlink(path)


if __name__ == "__main__":
    try:
        main(_spec(sys.argv[1]), sys.argv[3:])
    except OSError as exc:
        sys.stderr.write(f"toolrig: the command could not be confined: {exc}\n")
        sys.exit(126)
