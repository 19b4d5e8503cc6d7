"""The bubblewrap backend: a mount, pid, network, IPC and UTS namespace per command, built from a ``View``.

bubblewrap is a maintained setuid-free tool (Flatpak's): unprivileged it needs user namespaces, as root it uses
its own capabilities and drops them all (``--cap-drop ALL``) before the command. ``--disable-userns`` (with a
user namespace) stops the command from making another one to gain capabilities in; mounts made by bubblewrap
are locked below any namespace the command could still make, so a mask cannot be lifted from inside. bubblewrap
always sets ``no_new_privs``: a setuid binary gains nothing. The command's ``/proc`` is a fresh one of its own pid
namespace: toolrig, the launcher and every process outside are not in it, so neither ``/proc/PID/root`` nor
ptrace reaches them. ``--die-with-parent``: a killed bubblewrap takes the command with it, and the keeper's
kill of the command's process group reaches bubblewrap as well (no ``--new-session``: the keeper made one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache

from toolrig.sandbox.confine import View

_PROBE_SECONDS = 10.0
_BASE = ("--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net")


class Bubblewrap:
    """``bwrap`` at an absolute path; ``userns``: whether a user namespace is made (always, unless root without)."""

    name = "bwrap"

    def __init__(self, path: str, *, userns: bool) -> None:
        self.path = path
        self.userns = userns

    def holds(self) -> str:
        how = "user namespace" if self.userns else "root, no user namespace"
        return f"bwrap ({how}): filesystem view, pid and network namespaces, no new privileges"

    def prefix(self, *, own_network: bool = True) -> list[str]:
        """``own_network=False``: the caller already put the command in its session's network namespace.

        Unprivileged, the caller entered that namespace's owning user namespace, where it is uid 0 with every
        capability: the command's own user namespace maps it back to the user (``--uid``/``--gid``).
        """
        args = [self.path, *(_BASE if own_network else _BASE[:-1])]
        if self.userns:
            args += ["--unshare-user", "--disable-userns"]
            if not own_network:
                args += ["--uid", str(os.getuid()), "--gid", str(os.getgid())]
        args += ["--cap-drop", "ALL"]
        return args

    def wrap(self, view: View, argv: list[str]) -> list[str]:
        args = self.prefix(own_network=not view.joined)
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm"]  # noqa: S108
        args += _RUN
        args += ["--bind", view.tmp, "/tmp"]  # noqa: S108 - the session's private one, seen at /tmp
        if view.egress_dir is not None:  # the proxy's socket: the only way out of the network namespace
            args += ["--bind", view.egress_dir, view.egress_dir]
        for root in view.emptied:
            args += ["--perms", "0755", "--tmpfs", root]
        for path in view.writable:
            args += ["--bind", path, path]
        for path in view.pinned:  # parents first: a rename of any of them would carry a mask off its path
            args += ["--bind", path, path]
        for path in view.read_only:
            args += ["--ro-bind", path, path]
        for path in view.sealed:
            args += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
        for path in view.hidden_dirs:
            args += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
        mask = mask_file()
        for path in view.hidden_files:
            args += ["--ro-bind", mask, path]
        if view.seccomp_fd is not None:
            args += ["--seccomp", str(view.seccomp_fd)]
        args += ["--chdir", view.cwd, "--", *argv]
        return args


def _run_dirs() -> list[str]:
    """An empty ``/run`` (and ``/var/run`` unless it links there): the host's services listen in it.

    A read-only bind stops writes, not ``connect()`` (docker.sock, the D-Bus system bus, PostgreSQL, containerd).
    Kept: ``/run/shm`` (a link to the view's own ``/dev/shm``) and ``/run/lock`` (lock files of serial tools).
    """
    args: list[str] = []
    for top in ("/run", "/var/run"):
        if os.path.isdir(top) and not os.path.islink(top):
            args += ["--perms", "0755", "--tmpfs", top, "--symlink", "/dev/shm", f"{top}/shm"]  # noqa: S108
            args += ["--perms", "1777", "--dir", f"{top}/lock"]
    return args


_RUN = _run_dirs()
_MASK_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _mask_dir() -> str:
    made = tempfile.mkdtemp(prefix="toolrig-mask-")
    os.chmod(made, 0o711)  # noqa: S103 - searchable: a bind source must be reachable by the user bubblewrap runs as
    return made


def mask_file() -> str:
    """An empty file no one may read (mode 000; the command has no capability to read it anyway), made once."""
    with _MASK_LOCK:
        path = os.path.join(_mask_dir(), "hidden")
        if not os.path.exists(path):
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0)
            os.close(fd)
        return path


def setup_failure(stdout: str, stderr: str, exit_code: int | None) -> str | None:
    """Bubblewrap's own complaint when it could not build the view (the command never ran), else None."""
    if exit_code == 1 and not stdout and stderr.startswith("bwrap: ") and stderr.count("\n") <= 1:
        return stderr.removeprefix("bwrap: ").strip()
    return None


def find(search_path: str | None) -> str | None:
    """``bwrap`` on ``search_path`` (toolrig's own PATH), as an absolute path."""
    found = shutil.which("bwrap", path=search_path)
    return os.path.realpath(found) if found else None


@lru_cache(maxsize=8)
def probe(path: str, userns: bool) -> str | None:
    """Why ``bwrap`` at ``path`` cannot confine here (None: it can), tried once per process and kind."""
    backend = Bubblewrap(path, userns=userns)
    argv = [*backend.prefix(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]
    try:
        done = subprocess.run(  # noqa: S603 - an absolute path found on toolrig's PATH, fixed arguments
            argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=_PROBE_SECONDS, check=False, env={}
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path} could not be run ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{path} failed: {said[-1] if said else f'exit {done.returncode}'}"
    return None
