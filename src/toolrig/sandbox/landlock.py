"""Starting a helper process (ripgrep) that the kernel lets read only below directories we opened safely.

Trust model: ripgrep walks a tree by path strings, so a directory swapped for a symlink while it runs would
lead it outside the workspace; checking paths beforehand cannot close that race. Landlock (Linux 5.13+)
binds the rules to the directories' inodes, opened here without following links, so whatever a path
resolves to later, reads outside them fail in the kernel. Where Landlock is missing, ``spawn`` starts the
process unconfined and says so (``confined`` is False): the race is then open, as docs/policy.md states.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # x86_64 and aarch64 alike (generic table)
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_HANDLED = _READ_FILE | _READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@lru_cache(maxsize=1)
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


@lru_cache(maxsize=1)
def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable (old kernel, disabled, seccomp)."""
    try:
        version = int(_libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


@lru_cache(maxsize=8)
def loader_files(binary: str) -> tuple[str, ...]:
    """The files the dynamic loader reads to start ``binary`` (its libraries, the loader, its cache)."""
    env = {"LD_TRACE_LOADED_OBJECTS": "1", "PATH": os.environ.get("PATH", "")}
    try:
        done = subprocess.run([binary], env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=10, check=False)  # noqa: S603
    except (OSError, subprocess.SubprocessError):
        return (binary,)
    found = [binary, "/etc/ld.so.cache"]
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        if match := re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line):
            found.append(match.group(1))
    return tuple(dict.fromkeys(path for path in found if os.path.isfile(path)))


def _add(ruleset: int, fd: int, access: int) -> None:
    rule = _PathBeneath(access, fd)
    if _libc().syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_add_rule failed")


def _ruleset(directories: Sequence[int], files: Sequence[int], paths: Sequence[str], listed: Sequence[int] = ()) -> int:
    attr = _RulesetAttr(_HANDLED)
    ruleset = int(_libc().syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for fd in directories:
            _add(ruleset, fd, _READ_FILE | _READ_DIR)
        for fd in files:
            _add(ruleset, fd, _READ_FILE)
        for fd in listed:
            _add(ruleset, fd, _READ_DIR)
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                _add(ruleset, fd, _READ_FILE)
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def spawn(
    argv: Sequence[str],
    *,
    directories: Sequence[int],
    files: Sequence[int] = (),
    paths: Sequence[str] = (),
    listed: Sequence[int] = (),
    **popen: Any,
) -> tuple[subprocess.Popen[bytes], bool]:
    """``Popen(argv)`` that may read only below ``directories`` and the ``files`` given (descriptors).

    ``paths`` are more files it may read, named by path (trusted ones: ignore files above the search root);
    ``listed``, directories it may list but whose files it may not read (a directory a hidden path was carved from).

    The restriction is applied to a short-lived thread that then starts the process (Landlock confines the
    calling thread and what it starts), so toolrig itself stays unconfined. Returns the process and whether
    it is confined.
    """
    if abi() < 1:
        return subprocess.Popen(argv, **popen), False  # noqa: S603 - argv is built by the caller, no shell
    ruleset = _ruleset(directories, files, [*paths, *loader_files(argv[0])], listed)
    outcome: dict[str, Any] = {}
    # The confined thread could not open /dev/null itself: open it here and hand the descriptor over.
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    popen = {key: devnull if value is subprocess.DEVNULL else value for key, value in popen.items()}

    def start() -> None:
        try:
            libc = _libc()
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
            if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
            outcome["process"] = subprocess.Popen(argv, **popen)  # noqa: S603
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=start, name="toolrig-landlock-spawn", daemon=True)
    try:
        thread.start()
        thread.join()
    finally:
        os.close(ruleset)
        os.close(devnull)
    if "error" in outcome:
        raise outcome["error"]
    process: subprocess.Popen[bytes] = outcome["process"]
    return process, True
