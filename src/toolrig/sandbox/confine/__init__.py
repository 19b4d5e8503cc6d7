"""Confining a program toolrig runs for a model to a view of the machine the kernel enforces.

Trust model: the program is hostile and runs as toolrig's user. The file tools refuse a path by checking it;
a shell command names no path toolrig could check (``cat .env``, ``python3 -c "open('.env')"``, a symlink it
makes itself), so the same policy has to hold in the kernel: the command runs in a mount namespace where what
the policy refuses is not there (read) or is read-only (write), in its own pid namespace (toolrig's processes
are not in its ``/proc``), with no new privileges, no capabilities and no network but the one toolrig gives it.

The *view* (``View``) is a plain value built per call from the policy that call carries (``view.view_for``:
the workspace's roots, deny globs and state, the call's ``allowed_paths``); a *backend* turns it into an
argv prefix. Backends, in the order ``choose`` tries them:

- ``bwrap`` (bubblewrap, Linux user or root namespaces; what Flatpak and Anthropic's sandbox-runtime use):
  holds every part of the view.
- ``landlock`` (Linux 5.13+, no namespaces needed; what OpenAI Codex uses on Linux): writes only where the view
  writes; reads of toolrig's state and the user's secrets refused; deny globs inside the workspace, the pid
  namespace and the network are *not* held, and ``containment`` says so.
- ``none``: only the keeper's containment (process tree, limits); ``containment`` says nothing else holds.

What another backend must provide to stand beside these (and what ``View`` asks of it): macOS Seatbelt
(``sandbox-exec`` with a generated SBPL profile: ``file-write*`` allowed under the writable paths only,
``file-read*`` denied for each hidden path and glob (Seatbelt matches regexes, so nested and later files hold),
``network*`` denied but for the proxy's localhost port, ``process-info*`` of others denied); Docker (a container
per session: the roots as bind mounts, hidden paths as empty read-only mounts, ``--network none`` or an internal
network whose only route is the proxy, ``--pids-limit``, ``--security-opt no-new-privileges``, ``--cap-drop
ALL``, the per-session temp dir as a volume; commands by ``docker exec``); a Kubernetes sandbox (a pod per
session with the workspace as a volume, the same masks as projected empty volumes, a NetworkPolicy allowing only
the proxy, a restricted PodSecurity profile; commands through the exec API). Each reports in ``holds`` exactly
which parts of the view it enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

Mode = Literal["off", "auto", "required"]


@dataclass(frozen=True, slots=True)
class View:
    """What a confined program sees: every path absolute, host and sandbox alike (the view keeps paths).

    ``writable``: bound read-write (the roots, what config grants). ``read_only``: bound read-only on top of a
    writable one (``.git/hooks``, ``.git/config``, read-only globs). ``emptied``: roots replaced by an empty
    directory before ``writable`` is bound in (a call whose ``allowed_paths`` narrow the workspace).
    ``sealed``: directories that must exist, empty and read-only (``.toolrig`` where there is none yet).
    ``pinned``: directories of a writable path bound onto themselves before the masks, so each is a mount point
    and no command can rename or remove it (``EBUSY``): a mask below it stays on the path toolrig and git use.
    ``hidden_dirs`` / ``hidden_files``: replaced by an unreadable empty one. ``tmp``: the session's private
    temp directory, seen at ``/tmp``. ``labels`` names a hidden or read-only path for the model (``~/.ssh``).
    """

    writable: tuple[str, ...]
    cwd: str
    tmp: str
    read_only: tuple[str, ...] = ()
    emptied: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    planted: tuple[str, ...] = ()  # names git trusts that were absent: one there after the command is removed
    sealed: tuple[str, ...] = ()
    hidden_dirs: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    network: Literal["none", "guarded"] = "none"
    seccomp_fd: int | None = None  # a descriptor the command gets holding the filter bubblewrap installs
    egress_dir: str | None = None  # guarded: the egress proxy's private directory, bound in at its own path
    joined: bool = False  # guarded: the command joins its session's network namespace (no --unshare-net)

    def label(self, path: str) -> str:
        return self.labels.get(path, path)


class Backend(Protocol):
    """One mechanism that can enforce (part of) a ``View``."""

    name: str

    def holds(self) -> str:
        """What it enforces, in the words a result's ``containment`` carries."""
        ...

    def wrap(self, view: View, argv: list[str]) -> list[str]:
        """The argv that runs ``argv`` inside ``view`` (the keeper spawns it; inherited descriptors survive)."""
        ...


class SandboxUnavailable(Exception):
    """``sandbox: required`` and no mechanism holds on this machine (the message says why)."""
