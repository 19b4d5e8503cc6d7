"""A seccomp filter for bubblewrap's ``--seccomp``: ``socket(AF_UNIX)`` refused in every confined command.

Why: a read-only mount stops writes, not ``connect()`` to a socket in it (docker.sock, the D-Bus system bus,
PostgreSQL: anywhere in the host tree), and a filter cannot tell paths apart, so no new unix socket at all (as
Anthropic's sandbox-runtime does on Linux). ``socketpair()`` (local IPC) stays; io_uring is refused too (its
socket and connect operations bypass seccomp). The egress bridge needs no unix socket of its own: toolrig
connects to the proxy and the bridge gets that connection as a descriptor. Built by hand (13 BPF instructions):
no C library needed; a machine whose syscall numbers are not known here gets no filter (``containment`` says so).
"""

from __future__ import annotations

import os
import sys

# machine -> (AUDIT_ARCH, socket, io_uring_setup, x32 numbers to refuse)
_ARCHES = {"x86_64": (0xC000003E, 41, 425, True), "aarch64": (0xC00000B7, 198, 425, False)}
_DENY = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_ALLOW = 0x7FFF0000
_LD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return code.to_bytes(2, sys.byteorder) + bytes((jt, jf)) + k.to_bytes(4, sys.byteorder)


def unix_socket_filter() -> bytes | None:
    """The program (``struct sock_filter[]``) for this machine, or None where its syscall numbers are unknown."""
    arch = _ARCHES.get(os.uname().machine)
    if arch is None:
        return None
    audit, nr_socket, nr_uring, x32 = arch
    return b"".join(
        (
            _op(_LD, 4),  # seccomp_data.arch
            _op(_JEQ, audit, 1, 0),
            _op(_RET, _DENY),  # another ABI (32-bit int 0x80): refused rather than judged by the wrong numbers
            _op(_LD, 0),  # seccomp_data.nr
            _op(_JGE, 0x40000000 if x32 else 0xFFFFFFFF, 0, 1),
            _op(_RET, _DENY),  # the x32 ABI's numbers
            _op(_JEQ, nr_uring, 0, 1),
            _op(_RET, _DENY),
            _op(_JEQ, nr_socket, 0, 3),
            _op(_LD, 16 if sys.byteorder == "little" else 20),  # args[0], its low 32 bits: the family
            _op(_JEQ, 1, 0, 1),  # AF_UNIX
            _op(_RET, _DENY),
            _op(_RET, _ALLOW),
        )
    )


def filter_memfd() -> int | None:
    """A descriptor holding the filter at offset 0 (a new one per command: bubblewrap reads it to the end)."""
    prog = unix_socket_filter()
    if prog is None:
        return None
    fd = os.memfd_create("toolrig-seccomp", os.MFD_CLOEXEC)
    os.write(fd, prog)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
